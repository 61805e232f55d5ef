//! Turning a load run into a result: NOPM and TPM from the server's counters (per
//! database and in total), the client's own counts as a cross-check, per-transaction
//! counts, outcomes and latency histograms (merged exactly, never averaged), and the
//! spec's run-validity ratios (5.5.1.5) with a flag when one is off.

use std::sync::Arc;

use engine::load::{ClassStats, LoadOutcome};
use engine::StepOutput;
use model::{Flag, HistogramRecord, Metric, MissingMetric};

use crate::monitor::DbWindow;
use crate::txn::{self, Counters, Mix, CLASSES};
use crate::Config;

/// The figures of the spec's draws each load generator counts and reports at the end of
/// the test ([`Counters`]): none at a checkpoint.
pub(crate) const COUNTED_AT_END: [&str; 7] = [
    "new_order_rollback_pct",
    "remote_order_line_pct",
    "payment_remote_pct",
    "payment_by_last_name_pct",
    "order_status_by_last_name_pct",
    "delivery_skipped_pct",
    "order_lines_per_order",
];

/// A run's result from what its load generators measured (`o`) and, at the end of the
/// test (`at_end`), the server's counter readings per database and the generators'
/// validity counters. A checkpoint while the test runs has neither: what comes of them
/// is left out here, and the caller says it missing with why.
pub(crate) fn step_output(
    cfg: &Config,
    mix: &Mix,
    o: &LoadOutcome,
    at_end: Option<(&[DbWindow], &[Arc<Counters>])>,
) -> StepOutput {
    let (wins, counters) = at_end.unwrap_or((&[], &[]));
    // At the end, a counter per database; at a checkpoint, as configured.
    let ndb = match at_end {
        Some(_) => counters.len(),
        None => cfg.databases.max(1) as usize,
    };
    let multi = ndb > 1;
    // NOPM leads a TPC-C-like mix; one where New-Order is rare (read-mostly) or absent
    // measures something else, and TPM (all transactions) leads.
    let headline = if mix.weights[txn::NEW_ORDER] >= txn::NOPM_HEADLINE_MIN_PCT {
        "nopm"
    } else {
        "tpm"
    };
    // An engine that counts commits for the whole server (MariaDB): its TPM is read once
    // (database 1's window), never summed over the databases.
    let server_wide = cfg
        .engine_kind()
        .is_ok_and(crate::backend::EngineKind::xacts_server_wide);
    let mut out = StepOutput {
        headline: headline.into(),
        duration_s: o.duration_s,
        loadgen_threads: Some(cfg.vus as usize * ndb),
        ..Default::default()
    };
    let lbl = |m: Metric, db: usize| if multi { m.label("db", db + 1) } else { m };

    // NOPM / TPM from the server's counters (HammerDB's method), per database and total.
    // With no window at all there is nothing summed: NOPM and TPM are missing, never 0.
    let (mut nopm_total, mut tpm_total, mut have_all) =
        (0.0, 0.0, at_end.is_some() && !wins.is_empty());
    // Why TPM is not known although both readings are there (its counter went back).
    let mut tpm_unknown: Option<String> = None;
    for (i, w) in wins.iter().enumerate() {
        match (w.first, w.last) {
            (Some(a), Some(b)) if b.at > a.at => {
                let min = (b.at - a.at).as_secs_f64() / 60.0;
                let nopm = (b.next_o_id_sum - a.next_o_id_sum) as f64 / min;
                nopm_total += nopm;
                if multi {
                    out.metrics
                        .push(Metric::new("nopm", nopm, "new orders/min").label("db", i + 1));
                }
                if server_wide && i > 0 {
                    continue;
                }
                // A commit counter lower at the end than at the start was reset (a server
                // restarted, its statistics reset): the commits in between are not known,
                // and 0 would read as a measured stall.
                let of_db = if multi {
                    format!(" of database {}", i + 1)
                } else {
                    String::new()
                };
                if b.xacts < a.xacts {
                    tpm_unknown.get_or_insert(format!(
                        "the server's commit counter{of_db} went back during the run ({} to \
                         {}): a restart or a statistics reset",
                        a.xacts, b.xacts,
                    ));
                    continue;
                }
                // Over the span the two counts are complete between (both ends every
                // user's work counted: see `StatsMark`), which NOPM's readings need not be.
                let xmin = (b.xacts_at.saturating_duration_since(a.xacts_at)).as_secs_f64() / 60.0;
                if xmin <= 0.0 {
                    tpm_unknown
                        .get_or_insert("the server's transaction counts span no time".into());
                    continue;
                }
                // Fewer than the monitor's own: the counts do not add up (a counter the
                // server updates late), and 0 would read as a measured stall.
                let counted = b.xacts - a.xacts;
                if counted < w.own_xacts {
                    tpm_unknown.get_or_insert(format!(
                        "the server counted {counted} transactions{of_db} over the run, fewer \
                         than the {} the monitor itself made: its counts do not add up",
                        w.own_xacts,
                    ));
                    continue;
                }
                let tpm = (counted - w.own_xacts) as f64 / xmin;
                tpm_total += tpm;
                if multi && !server_wide {
                    out.metrics
                        .push(Metric::new("tpm", tpm, "transactions/min").label("db", i + 1));
                }
            }
            _ => {
                have_all = false;
                let why = w.error.clone().unwrap_or_else(|| {
                    "the run ended before the ramp-up did (no counter reading)".into()
                });
                out.missing.push(MissingMetric {
                    name: if multi {
                        format!("nopm{{db={}}}", i + 1)
                    } else {
                        "nopm".into()
                    },
                    reason: why,
                });
            }
        }
    }
    if have_all {
        out.metrics
            .push(Metric::new("nopm", nopm_total, "new orders/min"));
        match tpm_unknown.clone() {
            None => out
                .metrics
                .push(Metric::new("tpm", tpm_total, "transactions/min")),
            Some(why) => out.missing.push(MissingMetric {
                name: "tpm".into(),
                reason: why,
            }),
        }
    } else if at_end.is_some() {
        if wins.is_empty() {
            out.missing.push(MissingMetric {
                name: "nopm".into(),
                reason: "no database's counters were read".into(),
            });
        } else if multi {
            out.missing.push(MissingMetric {
                name: "nopm".into(),
                reason: "not every database's counters could be read".into(),
            });
        }
        out.missing.push(MissingMetric {
            name: "tpm".into(),
            reason: "the server's counters could not be read at both ends of the run".into(),
        });
    }
    let cut_short: Vec<_> = wins
        .iter()
        .filter(|w| w.first.is_some() && w.error.is_some())
        .collect();
    for w in &cut_short {
        out.flags.push(Flag::warning(
            "counters_incomplete",
            format!(
                "NOPM/TPM cover the run only up to the last reading of the server's counters \
             ({:.1} s before this result was made): {}",
                w.last.map_or(0.0, |l| l.at.elapsed().as_secs_f64()),
                w.error.clone().unwrap_or_default()
            ),
        ));
    }

    // Client-side counts (cross-check of the server's counters).
    let dur_min = o.duration_s / 60.0;
    let total: u64 = o.classes.iter().map(sent).sum();
    if dur_min > 0.0 {
        out.metrics.push(Metric::new(
            "tpm_client",
            total as f64 / dur_min,
            "transactions/min",
        ));
        out.metrics.push(Metric::new(
            "txn_per_s",
            total as f64 / o.duration_s,
            "transactions/s",
        ));
        let no_ok: u64 = o
            .classes
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 5 == txn::NEW_ORDER)
            .map(|(_, c)| c.ok - c.misses)
            .sum();
        let nopm_client = no_ok as f64 / dur_min;
        out.metrics
            .push(Metric::new("nopm_client", nopm_client, "new orders/min"));
        // Per database, the client's count of the transactions it sent per minute of the
        // measured window (committed, rolled back, or failed: the server rolls those back
        // and counts them too), as the total above counts them, so the databases add up
        // to it: the per-database TPM of an engine whose server counts commits for the
        // whole server (MariaDB), a cross-check of the server's per-database TPM on the
        // others. Named `tpm_client` so no reader takes it for the server's count.
        if multi {
            for d in 0..ndb {
                let done: u64 = (0..CLASSES.len())
                    .filter_map(|t| o.classes.get(5 * d + t))
                    .map(sent)
                    .sum();
                out.metrics.push(
                    Metric::new(
                        "tpm_client",
                        done as f64 / dur_min,
                        "transactions/min (client-counted)",
                    )
                    .label("db", d + 1),
                );
            }
        }
        // Counters read short of the end are not of the client's window: set against its
        // counts they disagreed "over the same measured window" beside counters_incomplete
        // saying they were not (a postmaster killed mid-run, audit s44).
        let whole = have_all && cut_short.is_empty();
        if whole && tpm_unknown.is_none() && !server_wide {
            let users = u64::from(cfg.vus) * ndb as u64;
            let late = wins.iter().map(|w| w.uncounted_at_first).sum();
            if let Some(f) = server_client_disagree(
                (tpm_total, total as f64 / dur_min),
                (nopm_total, nopm_client),
                dur_min,
                users,
                late,
            ) {
                out.flags.push(f);
            }
        }
        if whole && o.duration_s >= 10.0 && nopm_total > 0.0 {
            let diff = (nopm_client - nopm_total).abs() / nopm_total;
            if diff > 0.10 {
                out.flags.push(Flag::warning(
                    "nopm_mismatch",
                    format!(
                        "NOPM from the district counters ({nopm_total:.0}) and from the client's \
                         commits ({nopm_client:.0}) differ by {:.0}%",
                        diff * 100.0
                    ),
                ));
            }
        }
    }
    let cpu = o.loadgen_cpu_user_s + o.loadgen_cpu_sys_s;
    if total > 0 {
        out.metrics.push(Metric::new(
            "loadgen_cpu_per_txn_us",
            cpu * 1e6 / total as f64,
            "us",
        ));
    }

    // Per transaction: counts, outcomes, latency (merged across databases; per
    // database too when there are several).
    for (t, &name) in CLASSES.iter().enumerate() {
        let per_db: Vec<&ClassStats> = (0..ndb).filter_map(|d| o.classes.get(5 * d + t)).collect();
        let count: u64 = per_db.iter().map(|c| sent(c)).sum();
        let rollbacks: u64 = per_db.iter().map(|c| c.rollbacks).sum();
        let errors: u64 = per_db.iter().map(|c| c.error_count()).sum();
        out.metrics
            .push(Metric::new("transactions", count as f64, "transactions").label("txn", name));
        if o.duration_s > 0.0 {
            out.metrics.push(
                Metric::new("txn_per_s", count as f64 / o.duration_s, "transactions/s")
                    .label("txn", name),
            );
        }
        out.metrics
            .push(Metric::new("rollbacks", rollbacks as f64, "transactions").label("txn", name));
        out.metrics
            .push(Metric::new("errors", errors as f64, "transactions").label("txn", name));
        if total > 0 {
            out.metrics.push(
                Metric::new("mix_pct", 100.0 * count as f64 / total as f64, "%").label("txn", name),
            );
        }
        for c in &per_db {
            for (e, n) in &c.errors {
                out.metrics.push(
                    Metric::new("error_count", *n as f64, "transactions")
                        .label("txn", name)
                        .label("error", e),
                );
            }
        }
        let service = merge(per_db.iter().map(|c| &c.service));
        if let Some(h) = service.filter(|h| !h.is_empty()) {
            let rec = HistogramRecord::from_histogram(name, "service", &h);
            push_latency(&mut out, name, "service", &rec, &h);
            out.histograms.push(rec);
        }
        let corrected = merge(per_db.iter().filter_map(|c| c.corrected.as_ref()));
        if let Some(h) = corrected.filter(|h| !h.is_empty()) {
            let rec = HistogramRecord::from_histogram(name, "corrected", &h);
            push_latency(&mut out, name, "corrected", &rec, &h);
            out.histograms.push(rec);
        }
        if multi {
            for (d, c) in per_db.iter().enumerate() {
                if !c.service.is_empty() {
                    out.histograms.push(HistogramRecord::from_histogram(
                        &format!("{name}@db{}", d + 1),
                        "service",
                        &c.service,
                    ));
                }
                out.metrics.push(lbl(
                    Metric::new("transactions", sent(c) as f64, "transactions").label("txn", name),
                    d,
                ));
            }
        }
    }
    // Over all transaction types: the share over each threshold, mean and jitter.
    let thresholds = cfg.thresholds_ns();
    let views = |h: &hdrhistogram::Histogram<u64>, kind: &str| {
        engine::histlog::view_metrics(
            h,
            &thresholds,
            &[("txn", "all".into()), ("kind", kind.into())],
        )
    };
    if let Some(all) = merge(o.classes.iter().map(|c| &c.service)).filter(|h| !h.is_empty()) {
        out.metrics.extend(views(&all, "service"));
        out.histograms
            .push(HistogramRecord::from_histogram("all", "service", &all));
    }
    if let Some(all) =
        merge(o.classes.iter().filter_map(|c| c.corrected.as_ref())).filter(|h| !h.is_empty())
    {
        out.metrics.extend(views(&all, "corrected"));
        out.histograms
            .push(HistogramRecord::from_histogram("all", "corrected", &all));
    }
    if let Some(rate) = o.offered_rate {
        out.metrics
            .push(Metric::new("offered_txn_per_s", rate, "transactions/s"));
        out.metrics.push(Metric::new(
            "late_sends",
            o.late_sends as f64,
            "transactions",
        ));
        out.metrics.push(Metric::new(
            "unsent_requests",
            o.unsent_requests as f64,
            "transactions",
        ));
    }

    // The spec's run-validity ratios (5.5.1.5), over all databases.
    if at_end.is_some() {
        let sum = |f: fn(&Counters) -> &std::sync::atomic::AtomicU64| -> u64 {
            counters.iter().map(|c| Counters::get(f(c))).sum()
        };
        let new_orders = sum(|c| &c.new_orders);
        let lines = sum(|c| &c.order_lines);
        let payments = sum(|c| &c.payments);
        let statuses = sum(|c| &c.order_statuses);
        let ratios: [(&str, u64, u64, f64, f64, bool); 6] = [
            (
                "new_order_rollback_pct",
                sum(|c| &c.new_order_rollbacks),
                new_orders,
                0.9,
                1.1,
                true,
            ),
            (
                "remote_order_line_pct",
                sum(|c| &c.remote_order_lines),
                lines,
                0.95,
                1.05,
                cfg.warehouses > 1,
            ),
            (
                "payment_remote_pct",
                sum(|c| &c.remote_payments),
                payments,
                14.0,
                16.0,
                cfg.warehouses > 1,
            ),
            (
                "payment_by_last_name_pct",
                sum(|c| &c.payments_by_name),
                payments,
                57.0,
                63.0,
                true,
            ),
            (
                "order_status_by_last_name_pct",
                sum(|c| &c.order_statuses_by_name),
                statuses,
                57.0,
                63.0,
                true,
            ),
            (
                "delivery_skipped_pct",
                sum(|c| &c.delivery_skipped_districts),
                10 * sum(|c| &c.deliveries),
                0.0,
                1.0,
                true,
            ),
        ];
        for (name, num, den, lo, hi, applies) in ratios {
            // A remote share of one warehouse is no measured 0% to set beside the
            // spec's 1% and 15%: there is no other warehouse to be remote to.
            let why_not = if !applies {
                Some("one warehouse: there is no remote warehouse to draw")
            } else if den == 0 {
                Some("no transactions of that kind ran")
            } else {
                None
            };
            if let Some(why) = why_not {
                out.missing.push(MissingMetric {
                    name: name.into(),
                    reason: why.into(),
                });
                continue;
            }
            let pct = 100.0 * num as f64 / den as f64;
            out.metrics.push(Metric::new(name, pct, "%"));
            // Outside the spec's bounds by more than the draw's sampling error (3 standard
            // errors) means the generator is wrong, not that the run was short.
            let p = ((lo + hi) / 200.0).max(1e-6);
            let se = 100.0 * (p * (1.0 - p) / den as f64).sqrt();
            if pct < lo - 3.0 * se || pct > hi + 3.0 * se {
                out.flags.push(Flag::warning(
                    "tpcc_ratio",
                    format!(
                        "{name} = {pct:.2}% over {den} draws, outside the spec's {lo}-{hi}% (5.5.1.5)"
                    ),
                ));
            }
        }
        if new_orders > 0 {
            out.metrics.push(Metric::new(
                "order_lines_per_order",
                lines as f64 / new_orders as f64,
                "lines",
            ));
        }
    }
    out.flags.extend(measured_mix_flag(&o.classes, ndb));
    let below = mix.below_spec();
    if !below.is_empty() {
        out.flags.push(Flag::warning(
            "mix_below_spec",
            format!(
                "mix weights below the spec's minimum (5.2.3) for {}",
                below.join(", ")
            ),
        ));
    }
    // A stop (Ctrl-C, SIGTERM) is not a failure: the runner stores the test as
    // interrupted, with what was measured until then.
    if o.stopped_early.as_deref() == Some("interrupted") {
        out.flags.push(Flag::warning(
            "stopped_early",
            "the test stopped early: interrupted",
        ));
    } else if let Some(e) = &o.stopped_early {
        out.error = Some(e.clone());
    } else if let Some(e) = wins.iter().find_map(|w| w.error.clone()) {
        out.error = Some(format!("server counters: {e}"));
    }
    out
}

/// A warning when the measured mix (transactions sent per type, over every database)
/// is below the spec's minimum (5.2.3) for a type: a run of few decks per user, or a
/// mix set at or below the minimums (each user deals from a deck of the mix, which holds
/// it exactly only over whole decks). Never silent, as the mix is part of what makes
/// NOPM TPC-C's.
fn measured_mix_flag(classes: &[ClassStats], ndb: usize) -> Option<Flag> {
    let mut counts = [0u64; 5];
    for (i, c) in classes.iter().enumerate().take(5 * ndb) {
        counts[i % 5] += sent(c);
    }
    let below = txn::measured_below_spec(&counts);
    if below.is_empty() {
        return None;
    }
    let total: u64 = counts.iter().sum();
    let said: Vec<String> = below
        .iter()
        .map(|(class, pct, min)| {
            let n = counts[CLASSES.iter().position(|c| c == class).unwrap_or(0)];
            // Enough places to read below the minimum: 3.9992% at two read "4.00%,
            // minimum 4%".
            let places = if (pct * 100.0).round() / 100.0 >= *min {
                4
            } else {
                2
            };
            format!("{class} {pct:.places$}% ({n} of {total} transactions), minimum {min}%")
        })
        .collect();
    Some(Flag::warning(
        "mix_measured_below_spec",
        format!(
            "the measured mix is below the spec's minimum (5.2.3): {}",
            said.join("; ")
        ),
    ))
}

/// Transactions actually sent to the server: a terminal whose keying time the end of the
/// run cut short sends nothing and reports a `Miss` (see `txn`), which is not a transaction.
/// The headline of a partial result whose lost load generators' work is in the server's
/// counters (up to their loss) but in none of the clients' figures beside them (latency,
/// counts per type): NOPM and TPM become the reporting generators' own counts (`nopm`,
/// `tpm` = `nopm_client`, `tpm_client`), so the row is of one population, as the
/// `host_failed` flag says and as kv's and http's partial figures are; the server's go
/// to `nopm_server` and `tpm_server` (or their reasons to `missing`), and the flag says
/// so. Checks of the server's counts against the clients' go: they are of different
/// generators.
pub(crate) fn headline_of_reporting_generators(out: &mut StepOutput) {
    let server_name = |n: &str| match n.split_once('{') {
        Some((base, rest)) if base == "nopm" || base == "tpm" => {
            Some(format!("{base}_server{{{rest}"))
        }
        None if n == "nopm" || n == "tpm" => Some(format!("{n}_server")),
        _ => None,
    };
    for m in out.metrics.iter_mut() {
        if let Some(n) = server_name(&m.name) {
            m.name = n;
        }
    }
    for m in out.missing.iter_mut() {
        if let Some(n) = server_name(&m.name) {
            m.name = n;
        }
    }
    for (name, client, unit) in [
        ("nopm", "nopm_client", "new orders/min"),
        ("tpm", "tpm_client", "transactions/min"),
    ] {
        let v = out
            .metrics
            .iter()
            .find(|m| m.name == client && m.labels.is_empty())
            .map(|m| m.value);
        match v {
            Some(v) => out.metrics.push(Metric::new(name, v, unit)),
            None => out.missing.push(MissingMetric {
                name: name.into(),
                reason: "no load generator that reported measured any time".into(),
            }),
        }
    }
    out.flags
        .retain(|f| f.code != "server_client_disagree" && f.code != "nopm_mismatch");
    for f in out.flags.iter_mut().filter(|f| f.code == "host_failed") {
        f.message.push_str(
            "; NOPM and TPM are those generators' own counts (nopm_client, tpm_client): the \
             server's, which include the lost generators' work up to their loss, are kept \
             as nopm_server and tpm_server",
        );
    }
}

/// How far apart the server's count and the clients' may be, as a fraction of the
/// clients': with every generator's ramp-up out of the window both count the same
/// transactions (acceptance pass G, 1: 0.3% apart with one generator).
const SERVER_CLIENT_TOLERANCE: f64 = 0.01;

/// A warning when the server's TPM or NOPM and the clients' own count of the same window
/// (`(server, client)` per minute over `minutes`) differ by more than
/// [`SERVER_CLIENT_TOLERANCE`] and by more than two transactions per user (one in flight
/// at each end). `late`: users whose ramp-up was not yet counted at the first reading.
fn server_client_disagree(
    tpm: (f64, f64),
    nopm: (f64, f64),
    minutes: f64,
    users: u64,
    late: i64,
) -> Option<Flag> {
    let slack = 2.0 * users as f64;
    let apart = |(server, client): (f64, f64)| {
        let off = (server - client) / client;
        (client > 0.0
            && off.abs() > SERVER_CLIENT_TOLERANCE
            && (server - client).abs() * minutes > slack)
            .then_some(off)
    };
    let parts: Vec<String> = [("TPM", "tpm_client", tpm), ("NOPM", "nopm_client", nopm)]
        .into_iter()
        .filter_map(|(name, client_name, v)| {
            apart(v).map(|off| {
                format!(
                    "{name} (the server's count, {:.0}/min) is {:+.1}% off {client_name} (the load \
                     generators', {:.0}/min)",
                    v.0,
                    off * 100.0,
                    v.1
                )
            })
        })
        .collect();
    if parts.is_empty() {
        return None;
    }
    let why = if late > 0 {
        format!(
            " ({late} virtual user(s) had not had their ramp-up counted when the server's \
             counters were first read, so its end is in the server's count)"
        )
    } else {
        String::new()
    };
    Some(Flag::warning(
        "server_client_disagree",
        format!(
            "{} over the same measured window, beyond the {:.0}% they agree within{why}; \
             compare this result on tpm_client/nopm_client, or run it again (a longer \
             --duration shrinks a fixed offset)",
            parts.join("; "),
            SERVER_CLIENT_TOLERANCE * 100.0
        ),
    ))
}

fn sent(c: &ClassStats) -> u64 {
    c.count - c.misses
}

fn merge<'a>(
    hs: impl Iterator<Item = &'a hdrhistogram::Histogram<u64>>,
) -> Option<hdrhistogram::Histogram<u64>> {
    let mut acc: Option<hdrhistogram::Histogram<u64>> = None;
    for h in hs {
        match acc.as_mut() {
            None => acc = Some(h.clone()),
            Some(a) => {
                let _ = a.add(h);
            }
        }
    }
    acc
}

/// One transaction type's latency figures, from its exact merged histogram `h` (`rec` is
/// its stored form): p95 is not in the stored summary, so it is read from `h` itself.
fn push_latency(
    out: &mut StepOutput,
    txn: &str,
    kind: &str,
    rec: &HistogramRecord,
    h: &hdrhistogram::Histogram<u64>,
) {
    let s = &rec.summary;
    for (name, v) in [
        ("latency_mean_ns", s.mean_ns),
        ("latency_p50_ns", s.p50_ns as f64),
        ("latency_p90_ns", s.p90_ns as f64),
        ("latency_p95_ns", h.value_at_quantile(0.95) as f64),
        ("latency_p99_ns", s.p99_ns as f64),
        ("latency_max_ns", s.max_ns as f64),
    ] {
        out.metrics.push(
            Metric::new(name, v, "ns")
                .label("txn", txn)
                .label("kind", kind),
        );
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::monitor::DbSample;

    fn class(name: &str, count: u64, rollbacks: u64) -> ClassStats {
        let mut h = model::hist::new_latency_histogram();
        for i in 0..count {
            h.record(1_000_000 + i).unwrap();
        }
        ClassStats {
            name: name.into(),
            count,
            ok: count - rollbacks,
            hits: 0,
            misses: 0,
            mismatches: 0,
            rollbacks,
            errors: BTreeMap::new(),
            service: h,
            corrected: None,
        }
    }

    fn outcome() -> LoadOutcome {
        LoadOutcome {
            classes: vec![
                class("new_order", 4500, 45),
                class("payment", 4300, 0),
                class("order_status", 400, 0),
                class("delivery", 400, 0),
                class("stock_level", 400, 0),
            ],
            duration_s: 60.0,
            interval_rates: vec![],
            offered_rate: None,
            late_sends: 0,
            generator_late_sends: 0,
            unsent_requests: 0,
            connection_errors: BTreeMap::new(),
            lost_requests: BTreeMap::new(),
            reconnects: 0,
            connect: None,
            bytes_tx: 0,
            bytes_rx: 0,
            loadgen_cpu_user_s: 0.5,
            loadgen_cpu_sys_s: 0.5,
            stopped_early: None,
            client_io_fallback: None,
        }
    }

    fn window(new_orders: i64, xacts: i64) -> DbWindow {
        let t0 = Instant::now();
        DbWindow {
            first: Some(DbSample {
                at: t0,
                next_o_id_sum: 30_010,
                xacts: 1_000,
                xacts_at: t0,
            }),
            last: Some(DbSample {
                at: t0 + Duration::from_secs(60),
                next_o_id_sum: 30_010 + new_orders,
                xacts: 1_000 + xacts + 61,
                xacts_at: t0 + Duration::from_secs(60),
            }),
            own_xacts: 61,
            uncounted_at_first: 0,
            error: None,
        }
    }

    fn counters(rollbacks: u64) -> Arc<Counters> {
        let c = Counters::default();
        c.new_orders.store(4500, Ordering::Relaxed);
        c.new_order_rollbacks.store(rollbacks, Ordering::Relaxed);
        c.order_lines.store(45_000, Ordering::Relaxed);
        c.payments.store(4300, Ordering::Relaxed);
        c.payments_by_name.store(2580, Ordering::Relaxed);
        c.order_statuses.store(400, Ordering::Relaxed);
        c.order_statuses_by_name.store(240, Ordering::Relaxed);
        c.deliveries.store(400, Ordering::Relaxed);
        Arc::new(c)
    }

    fn value(out: &StepOutput, name: &str) -> Option<f64> {
        out.metrics
            .iter()
            .find(|m| m.name == name && m.labels.is_empty())
            .map(|m| m.value)
    }

    /// No counter window read at the end: NOPM and TPM are missing with why, never the 0
    /// of an empty sum.
    #[test]
    fn no_counter_window_gives_no_nopm_or_tpm() {
        let out = step_output(
            &Config::default(),
            &Mix::default(),
            &outcome(),
            Some((&[], &[counters(45)])),
        );
        assert_eq!(value(&out, "nopm"), None);
        assert_eq!(value(&out, "tpm"), None);
        for name in ["nopm", "tpm"] {
            assert!(
                out.missing.iter().any(|m| m.name == name),
                "{name}: {:?}",
                out.missing
            );
        }
    }

    /// MariaDB's commit counter is the server's: with two databases its TPM is the one
    /// reading, not twice it, and no per-database TPM is made up from it (the client's
    /// per-database count is `tpm_client`); NOPM stays per database.
    #[test]
    fn a_server_wide_tpm_is_counted_once() {
        let cfg = Config {
            engine: Some("mariadb".into()),
            databases: 2,
            ..Config::default()
        };
        let mut wins = [window(4455, 28_000), window(4000, 28_000)];
        for w in &mut wins {
            // Com_commit is not moved by the monitor's reads.
            w.own_xacts = 0;
            if let Some(l) = w.last.as_mut() {
                l.xacts -= 61;
            }
        }
        let out = step_output(
            &cfg,
            &Mix::default(),
            &outcome(),
            Some((&wins, &[counters(45), counters(45)])),
        );
        assert!((value(&out, "tpm").unwrap() - 28_000.0).abs() < 1e-6);
        assert!((value(&out, "nopm").unwrap() - 8455.0).abs() < 1e-6);
        assert!(out
            .metrics
            .iter()
            .all(|m| m.name != "tpm" || m.labels.is_empty()));
    }

    /// Per database, the client's transactions sent per minute (`tpm_client{db=N}`, said
    /// to be client-counted in its unit): the only per-database TPM an engine counting
    /// commits server-wide can give. Misses (nothing sent) are not transactions; failed
    /// ones are (the server rolled them back), as in the total, which the databases sum
    /// to.
    #[test]
    fn per_database_tpm_is_counted_by_the_client() {
        let cfg = Config {
            engine: Some("mariadb".into()),
            databases: 2,
            ..Config::default()
        };
        let mut o = outcome();
        let mut second = outcome().classes;
        // Database 2: 100 fewer payments, 20 of its new orders missed, 5 failed.
        second[1] = class("payment", 4200, 0);
        second[0].misses = 20;
        second[0].count += 5;
        second[0].errors.insert("deadlock".into(), 5);
        o.classes.extend(second);
        let wins = [window(4455, 28_000), window(4000, 28_000)];
        let out = step_output(
            &cfg,
            &Mix::default(),
            &o,
            Some((&wins, &[counters(45), counters(45)])),
        );
        let per_db = |d: &str| {
            out.metrics
                .iter()
                .find(|m| {
                    m.name == "tpm_client"
                        && m.labels.len() == 1
                        && m.labels.get("db").map(String::as_str) == Some(d)
                })
                .unwrap_or_else(|| panic!("no tpm_client{{db={d}}}: {:?}", out.metrics))
        };
        // 60 s measured: committed + rolled back + failed, per minute.
        assert_eq!(per_db("1").value, 10_000.0);
        assert_eq!(per_db("2").value, 10_000.0 - 100.0 - 20.0 + 5.0);
        let total = out
            .metrics
            .iter()
            .find(|m| m.name == "tpm_client" && m.labels.is_empty())
            .unwrap();
        assert_eq!(total.value, per_db("1").value + per_db("2").value);
        assert!(per_db("1").unit.contains("client-counted"));
        // The server's figure stays the headline, read once.
        assert!((value(&out, "tpm").unwrap() - 28_000.0).abs() < 1e-6);
        // One database: no per-database figure.
        let out = step_output(
            &Config::default(),
            &Mix::default(),
            &outcome(),
            Some((&[window(4455, 14_000)], &[counters(45)])),
        );
        assert!(out.metrics.iter().all(|m| !m.labels.contains_key("db")));
    }

    /// Each transaction type's p95 is the 0.95 quantile of its merged histogram (not
    /// the p90 the stored summary holds).
    #[test]
    fn p95_per_transaction_type_is_the_histograms() {
        let mut o = outcome();
        // new_order: 1..=100 ms, so p90 (90 ms) and p95 (95 ms) are far apart.
        let mut h = model::hist::new_latency_histogram();
        for v in 1..=100u64 {
            h.record(v * 1_000_000).unwrap();
        }
        o.classes[0].service = h;
        let out = step_output(
            &Config::default(),
            &Mix::default(),
            &o,
            Some((&[window(4455, 14_000)], &[counters(45)])),
        );
        for name in CLASSES {
            let rec = out
                .histograms
                .iter()
                .find(|h| h.name == name && h.kind == "service")
                .unwrap();
            let want = rec.histogram().unwrap().value_at_quantile(0.95) as f64;
            let p95 = out
                .metrics
                .iter()
                .find(|m| {
                    m.name == "latency_p95_ns"
                        && m.labels.get("txn").map(String::as_str) == Some(name)
                        && m.labels.get("kind").map(String::as_str) == Some("service")
                })
                .map(|m| m.value);
            assert_eq!(p95, Some(want), "{name}");
        }
        let p95 = out
            .metrics
            .iter()
            .find(|m| m.name == "latency_p95_ns")
            .unwrap()
            .value;
        assert!((p95 / 95e6 - 1.0).abs() < 0.001, "{p95}");
    }

    /// A mix without New-Order, or with little, has no NOPM to lead with: TPM leads.
    /// The audited run's measured mix, Order-Status 393 of 10,626 transactions (3.70%),
    /// is flagged, saying the share, the counts and the minimum; a mix at the minimums
    /// is not, nor one whose users split over two databases meets them in sum.
    #[test]
    fn a_measured_mix_below_the_spec_is_flagged() {
        let flagged = |o: &LoadOutcome, ndb: usize| {
            let wins = vec![window(4800, 10_000); ndb];
            let cs: Vec<_> = (0..ndb).map(|_| counters(0)).collect();
            let cfg = Config {
                databases: ndb as u32,
                ..Config::default()
            };
            step_output(&cfg, &Mix::default(), o, Some((&wins, &cs)))
                .flags
                .into_iter()
                .filter(|f| f.code == "mix_measured_below_spec")
                .collect::<Vec<_>>()
        };
        let mut o = outcome();
        o.classes[0] = class("new_order", 4500, 45);
        o.classes[1] = class("payment", 4700, 0);
        o.classes[2] = class("order_status", 393, 0);
        o.classes[3] = class("delivery", 480, 0);
        o.classes[4] = class("stock_level", 553, 0);
        let f = flagged(&o, 1);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, model::Severity::Warning);
        assert_eq!(
            f[0].message,
            "the measured mix is below the spec's minimum (5.2.3): order_status 3.70% (393 of \
             10626 transactions), minimum 4%"
        );
        // Just below (1,019 of 25,480: 3.9992%), it reads below, not "4.00%, minimum 4%".
        let mut o = outcome();
        o.classes[0] = class("new_order", 11466, 0);
        o.classes[1] = class("payment", 10956, 0);
        o.classes[2] = class("order_status", 1019, 0);
        o.classes[3] = class("delivery", 1019, 0);
        o.classes[4] = class("stock_level", 1020, 0);
        let f = flagged(&o, 1);
        assert!(
            f[0].message.contains("order_status 3.9992% (1019 of 25480"),
            "{f:?}"
        );
        // 45/43/4/4/4 exactly meets the minimums.
        assert!(flagged(&outcome(), 1).is_empty());
        // Two databases: database 2 has the Order-Statuses database 1 lacks.
        let mut two = outcome();
        two.classes[2] = class("order_status", 300, 0);
        two.classes.extend(outcome().classes);
        two.classes[7] = class("order_status", 500, 0);
        assert!(flagged(&two, 2).is_empty());
    }

    #[test]
    fn a_read_only_mix_leads_with_tpm() {
        let mix = Mix::new(&[0.0, 0.0, 50.0, 0.0, 50.0]).unwrap();
        let out = step_output(
            &Config::default(),
            &mix,
            &outcome(),
            Some((&[window(0, 14_000)], &[counters(0)])),
        );
        assert_eq!(out.headline, "tpm");
        assert!(value(&out, "tpm").unwrap() > 0.0);
        // Read-mostly (4% New-Order) leads with TPM too; TPC-C's mix with NOPM.
        for (name, lead) in [("read-mostly", "tpm"), ("tpcc", "nopm")] {
            let mix = Mix::new(&txn::named_mix(name).unwrap()).unwrap();
            let out = step_output(
                &Config::default(),
                &mix,
                &outcome(),
                Some((&[window(0, 14_000)], &[counters(0)])),
            );
            assert_eq!(out.headline, lead, "{name}");
        }
    }

    /// `--latency-thresholds`: the share of all transactions over each, as kv and http.
    #[test]
    fn latency_thresholds_give_the_share_over_each() {
        let cfg = Config {
            latency_thresholds: vec!["2ms".into(), "500us".into()],
            ..Config::default()
        };
        let out = step_output(
            &cfg,
            &Mix::default(),
            &outcome(),
            Some((&[window(0, 14_000)], &[counters(0)])),
        );
        let over = |t: &str| {
            out.metrics
                .iter()
                .find(|m| {
                    m.name == "latency_pct_over"
                        && m.labels.get("over").map(String::as_str) == Some(t)
                        && m.labels.get("txn").map(String::as_str) == Some("all")
                })
                .map(|m| m.value)
        };
        // Every transaction took 1.000 to 1.0045 ms.
        assert_eq!(over("500us"), Some(100.0));
        assert_eq!(over("2ms"), Some(0.0));
    }

    #[test]
    fn nopm_and_tpm_come_from_the_server_counters() {
        let cfg = Config::default();
        let out = step_output(
            &cfg,
            &Mix::default(),
            &outcome(),
            Some((&[window(4455, 10_000)], &[counters(45)])),
        );
        assert_eq!(out.headline, "nopm");
        assert!((value(&out, "nopm").unwrap() - 4455.0).abs() < 1e-6);
        // The monitor's own 61 readings are not counted as the workload's transactions.
        assert!((value(&out, "tpm").unwrap() - 10_000.0).abs() < 1e-6);
        assert!((value(&out, "nopm_client").unwrap() - 4455.0).abs() < 1e-6);
        assert!((value(&out, "new_order_rollback_pct").unwrap() - 1.0).abs() < 1e-9);
        assert!((value(&out, "loadgen_cpu_per_txn_us").unwrap() - 100.0).abs() < 1e-6);
        assert!(out.flags.is_empty(), "{:?}", out.flags);
        assert!(out.histograms.iter().any(|h| h.name == "new_order"));
        // Remote ratios do not apply to one warehouse: missing with the reason (a 0%
        // was read beside the spec's 1% and 15%), never flagged.
        for name in ["remote_order_line_pct", "payment_remote_pct"] {
            assert_eq!(value(&out, name), None);
            let m = out.missing.iter().find(|m| m.name == name).unwrap();
            assert_eq!(
                m.reason,
                "one warehouse: there is no remote warehouse to draw"
            );
        }
    }

    /// The server's TPM or NOPM off the clients' count of the same window by more than
    /// 1% is flagged, naming both figures (acceptance pass G, 1: 3-4% with two load
    /// generators, unflagged); within it, or within two transactions per user, not.
    #[test]
    fn server_and_client_counts_apart_are_flagged() {
        // The fixture's clients: 10,000 transactions and 4,455 new orders in 60 s.
        let flagged = |w: DbWindow| {
            of_window(w)
                .flags
                .into_iter()
                .find(|f| f.code == "server_client_disagree")
        };
        let f = flagged(window(4455, 10_350)).expect("3.5% apart");
        assert!(
            f.message
                .contains("TPM (the server's count, 10350/min) is +3.5% off tpm_client")
                && !f.message.contains("NOPM")
                && f.message.contains("compare this result on tpm_client"),
            "{}",
            f.message
        );
        let f = flagged(window(4300, 10_000)).expect("NOPM 3.5% apart");
        assert!(f.message.contains("NOPM") && !f.message.contains("TPM ("));
        assert!(flagged(window(4455, 10_090)).is_none(), "0.9% apart");
        // Late users are named as the likely cause.
        let mut w = window(4455, 10_350);
        w.uncounted_at_first = 2;
        assert!(flagged(w).unwrap().message.contains("2 virtual user(s)"));
    }

    /// The result of one database's counter window `w`, the rest of the fixture's.
    fn of_window(w: DbWindow) -> StepOutput {
        step_output(
            &Config::default(),
            &Mix::default(),
            &outcome(),
            Some((&[w], &[counters(45)])),
        )
    }

    /// A commit counter lower at the end than at the start (the server restarted, its
    /// statistics were reset): TPM is missing with the reason, not 0; NOPM (from the
    /// districts' next order ids) stands.
    #[test]
    fn a_commit_counter_that_went_back_gives_no_tpm() {
        let mut w = window(4455, 14_000);
        if let Some(l) = w.last.as_mut() {
            l.xacts = 9_000;
        }
        if let Some(f) = w.first.as_mut() {
            f.xacts = 1_200_000;
        }
        let out = of_window(w);
        assert_eq!(value(&out, "tpm"), None);
        assert!(out
            .missing
            .iter()
            .any(|m| m.name == "tpm" && m.reason.contains("went back")));
        assert!((value(&out, "nopm").unwrap() - 4455.0).abs() < 1e-6);
        // Fewer commits counted than the monitor's own: missing too, not 0.
        let mut w = window(4455, 14_000);
        let counted = w.last.unwrap().xacts - w.first.unwrap().xacts;
        w.own_xacts = counted + 5;
        let out = of_window(w);
        assert_eq!(value(&out, "tpm"), None);
        assert!(out
            .missing
            .iter()
            .any(|m| m.name == "tpm" && m.reason.contains("do not add up")));
    }

    #[test]
    fn a_ratio_far_outside_the_spec_is_flagged() {
        let out = step_output(
            &Config::default(),
            &Mix::default(),
            &outcome(),
            Some((&[window(4275, 14_000)], &[counters(225)])),
        );
        assert!(out
            .flags
            .iter()
            .any(|f| f.code == "tpcc_ratio" && f.message.contains("new_order_rollback_pct")));
    }

    #[test]
    fn unreadable_counters_are_missing_not_zero() {
        let w = DbWindow {
            error: Some("connection refused".into()),
            ..DbWindow::default()
        };
        let out = of_window(w);
        assert_eq!(value(&out, "nopm"), None);
        assert!(out
            .missing
            .iter()
            .any(|m| m.name == "nopm" && m.reason.contains("refused")));
        assert!(out.error.is_some());
    }
}
