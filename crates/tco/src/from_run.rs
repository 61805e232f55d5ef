//! Taking a platform's power and performance from a stored run (pure: the CLI loads the
//! run from the store and hands it here).
//!
//! The power source is the one every part of rackbench uses, [`model::power::headline`].
//! It must be whole-server to be used in a rack model (a wall meter, IPMI DCMI, a
//! whole-system hwmon sensor, or a declared model, carried as modelled); RAPL
//! package/DRAM power is a component and is refused with a reason (a rack is filled by
//! wall watts, not package watts).

use std::collections::BTreeMap;

use model::{ResultRecord, RunRecord, Status};

use crate::compute::{FromRun, Sourced};
use crate::plan::{PerfFrom, Platform};

/// Order of preference among whole-server sources: a meter at the wall first.
fn param_matches(have: Option<&serde_json::Value>, want: &serde_json::Value) -> bool {
    let Some(have) = have else { return false };
    if have == want {
        return true;
    }
    let s = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    s(have) == s(want)
}

/// The results of `run` that a platform selects: completed, not invalid, of its test and
/// parameters, and not a capacity procedure (a ramp's headline is its peak, its power
/// the mean of every step: no server's figures).
pub fn select<'a>(run: &'a RunRecord, p: &Platform) -> Vec<&'a ResultRecord> {
    run.results
        .iter()
        .filter(|r| r.status == Status::Ok && !r.is_invalid())
        .filter(|r| r.capacity_phase().is_none())
        .filter(|r| !matches!(&p.test, Some(t) if t != &r.test))
        .filter(|r| {
            p.params
                .iter()
                .all(|(k, v)| param_matches(r.params.get(k), v))
        })
        .collect()
}

/// A stable key for a result's sweep point: test plus its parameters.
fn point_key(r: &ResultRecord) -> String {
    let params = params_key(r);
    if params.is_empty() {
        r.test.clone()
    } else {
        format!("{} {params}", r.test)
    }
}

/// A result's parameters, `k=v` joined by spaces: the configuration it ran.
fn params_key(r: &ResultRecord) -> String {
    r.params
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Power and performance of one board from a stored run.
pub fn from_run(run: &RunRecord, p: &Platform) -> FromRun {
    let mut out = FromRun::default();
    let results = select(run, p);
    if results.is_empty() {
        out.problems.push(format!(
            "run {} has no completed, valid result{}",
            run.id,
            match (&p.test, p.params.is_empty()) {
                (Some(t), _) if model::CAPACITY_TESTS.contains(&t.as_str()) => format!(
                    " for test `{t}` that a TCO can take: a capacity test's figures are per \
                     step (its headline one step's, its power every step's), no server's; \
                     choose an ordinary test"
                ),
                (Some(t), _) => format!(" for test `{t}`"),
                (None, false) => " with the given params".to_string(),
                _ if run.results.iter().any(|r| r.capacity_phase().is_some()) => {
                    " that a TCO can take: its results are capacity tests (ramp, search, \
                     levels), whose figures are per step, no server's; take performance from \
                     a run of an ordinary test (`rackbench run http -t load`, `rackbench run \
                     kv -t get`...), or give the platform's `perf` in the TCO plan"
                        .to_string()
                }
                _ => {
                    let all: Vec<&ResultRecord> = run.results.iter().collect();
                    model::none_counted_because(&all, "result")
                        .map(|w| format!(": {w}"))
                        .unwrap_or_default()
                }
            }
        ));
        return out;
    }
    // A rack is sized by throughput: a headline better lower (a latency) is no performance
    // to divide by dollars or watts (its power is still the run's).
    let lower_better = results.iter().find(|r| {
        let unit = r
            .metric(&r.headline, &[])
            .map(|m| m.unit.as_str())
            .unwrap_or("");
        !model::higher_is_better(&r.headline, unit)
    });
    let perf_given = p.perf.is_some() || !p.perf_tests.is_empty();
    let perf = match lower_better {
        // The plan's performance is used, of a point the run cannot know: its power is
        // of one configuration or none (checked below), never the best point's because
        // `perf_from = "max"` (150 W at the 150k given, 400 W at the run's best).
        _ if perf_given => None,
        Some(r) => {
            out.problems.push(format!(
                "run {}: the headline of `{}` is {}, better lower: a TCO needs a throughput \
                 (choose another test with `test = ...`, or give `perf = ...`)",
                run.id, r.test, r.headline
            ));
            None
        }
        None => match units_apart(&results) {
            // The highest of MB/s and signs/s is no performance: one test at a time.
            Some(units) if p.perf_from == PerfFrom::Max => {
                out.problems.push(format!(
                    "run {}: its tests' headlines are in different units ({units}): the \
                     highest of them is no performance (choose one with `test = ...`)",
                    run.id
                ));
                None
            }
            _ => perf_of(run, &results, p.perf_from),
        },
    };
    // Power from the very point the performance figure is: a sweep's points draw
    // different power, and their mean beside the best point's performance is no server.
    let (power_results, of_point) = match &perf {
        Some((_, Some(key))) => (
            results
                .iter()
                .copied()
                .filter(|r| &point_key(r) == key)
                .collect(),
            Some(key.clone()),
        ),
        _ => (results, None),
    };
    // Performance given in the plan, power from the run: the power must be of one
    // configuration. Results at several values of a swept parameter are as many servers
    // (1 to 46 instances: 150 to 400 W), and their mean is none of them. One `perf` is
    // of one test too: `-t set,get`'s mean power goes with neither (named `perf_tests`
    // are several, their power the mean of theirs, as the report's summary takes it).
    if of_point.is_none() && perf_given {
        let key_of = if p.perf_tests.is_empty() {
            point_key
        } else {
            params_key
        };
        let configs: std::collections::BTreeSet<String> =
            power_results.iter().map(|r| key_of(r)).collect();
        // A run with no whole-server power at any point: that first, as no choice of
        // `params` can fix it (asking for them first sent the user to fix the wrong thing).
        if configs.len() > 1 && !any_whole_server_power(&power_results) {
            if let Err(why) = power_of(run, &power_results) {
                out.problems.push(why);
                out.perf = perf.map(|(s, _)| s);
                return out;
            }
        }
        if configs.len() > 1 {
            // Tests at one setting (`-t set,get`): `test` alone chooses.
            let settings: std::collections::BTreeSet<String> =
                power_results.iter().map(|r| params_key(r)).collect();
            let give = if settings.len() == 1 {
                "give `test`"
            } else {
                "give `params` (and `test`)"
            };
            out.problems.push(format!(
                "run {}: its results are at {} sweep points ({}): {give} for the one whose \
                 power goes with the performance given",
                run.id,
                configs.len(),
                configs.into_iter().collect::<Vec<_>>().join("; ")
            ));
            out.perf = perf.map(|(s, _)| s);
            return out;
        }
    }
    if perf.is_some() {
        out.perf_points = power_results.iter().map(|r| (*r).clone()).collect();
    }
    out.warnings = warnings_of(&power_results, !perf_given);
    out.perf = perf.map(|(s, _)| s);
    out.power_w = match power_of(run, &power_results) {
        Ok(mut s) => {
            if let Some(key) = of_point {
                s.source = format!(
                    "{}; the point is the performance figure's ({key})",
                    s.source
                );
            }
            Some(s)
        }
        // Said only where the plan needs it: a platform whose power the plan gives had
        // a power source's absence appended to its performance's error.
        Err(why) => {
            if p.power_w.is_none() {
                out.problems.push(why);
            }
            None
        }
    };
    out
}

/// The warnings `results` carry, each once with the tests that carry it:
/// `low_hit_ratio (get)`, `other_load (set, get)`; and, where the plan does not give the
/// performance (`perf_from_run`), `high_variation` where a point's repetitions vary as the
/// report flags them ([`model::unsteady_cv`]: a TCO of a run whose headline varied by cv
/// 29% showed its figures as steady).
fn warnings_of(results: &[&ResultRecord], perf_from_run: bool) -> Vec<String> {
    let mut by_code: Vec<(String, Vec<String>)> = Vec::new();
    let mut add = |code: &str, test: &str| {
        let i = match by_code.iter().position(|(c, _)| c == code) {
            Some(i) => i,
            None => {
                by_code.push((code.to_string(), Vec::new()));
                by_code.len() - 1
            }
        };
        if !by_code[i].1.iter().any(|t| t == test) {
            by_code[i].1.push(test.to_string());
        }
    };
    let mut headlines: BTreeMap<String, (&str, Vec<f64>)> = BTreeMap::new();
    for r in results {
        for f in r
            .flags
            .iter()
            .filter(|f| f.severity == model::Severity::Warning)
        {
            add(&f.code, &r.test);
        }
        if let (Some(v), true) = (r.headline_value(), perf_from_run) {
            let point = headlines
                .entry(point_key(r))
                .or_insert((&r.test, Vec::new()));
            point.1.push(v);
        }
    }
    for (test, values) in headlines.values() {
        if model::unsteady_cv(values).is_some() {
            add("high_variation", test);
        }
    }
    by_code
        .into_iter()
        .map(|(code, tests)| format!("{code} ({})", tests.join(", ")))
        .collect()
}

/// Whether any of `results` has whole-server power on any host (the one headline rule).
fn any_whole_server_power(results: &[&ResultRecord]) -> bool {
    results.iter().any(|r| {
        r.telemetry_summary
            .iter()
            .any(|ts| model::power::headline(&ts.power).is_some_and(|h| h.whole_system))
    })
}

/// The headlines' units, joined, when they are not all one.
fn units_apart(results: &[&ResultRecord]) -> Option<String> {
    let units: std::collections::BTreeSet<String> = results
        .iter()
        .filter_map(|r| {
            r.metric(&r.headline, &[])
                .map(|m| model::display_unit(&m.name, &m.unit))
        })
        .collect();
    (units.len() > 1).then(|| units.into_iter().collect::<Vec<_>>().join(", "))
}

/// The performance figure, and the sweep point it comes from when it is one point's.
fn perf_of(
    run: &RunRecord,
    results: &[&ResultRecord],
    how: PerfFrom,
) -> Option<(Sourced, Option<String>)> {
    // Repetitions of a sweep point are averaged first: one figure per point; none of a
    // point only some of whose repetitions made one (a search that missed its objective
    // at the lowest rate in the others), as the report and compare give none.
    let mut of_point: BTreeMap<String, Vec<&ResultRecord>> = BTreeMap::new();
    for r in results {
        of_point.entry(point_key(r)).or_default().push(r);
    }
    let mut points: BTreeMap<String, (f64, usize, String)> = BTreeMap::new();
    for r in results {
        let Some(v) = r.headline_value() else {
            continue;
        };
        if model::headline_of_some_repetitions(&of_point[&point_key(r)]).is_some() {
            continue;
        }
        // In the unit a table gives it (RSA signs in signs/s, not ops/s).
        let unit = r
            .metric(&r.headline, &[])
            .map(|m| model::display_unit(&m.name, &m.unit))
            .unwrap_or_default();
        let e = points.entry(point_key(r)).or_insert((0.0, 0, unit));
        e.0 += v;
        e.1 += 1;
    }
    let means: Vec<(String, f64, String)> = points
        .into_iter()
        .map(|(k, (sum, n, unit))| (k, sum / n as f64, unit))
        .collect();
    if means.is_empty() {
        return None;
    }
    match how {
        PerfFrom::Max => {
            let best = means.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
            Some((
                Sourced {
                    value: best.1,
                    source: format!("run {}: highest headline ({})", run.id, best.0),
                    modelled: false,
                    model: None,
                    unit: Some(best.2.clone()),
                    run: Some(run.id.clone()),
                },
                Some(best.0.clone()),
            ))
        }
        // The geometric mean over chosen tests at one sweep point is the report's
        // summary selection; the CLI takes it from there (`report::summary_with`), so
        // the TCO and the report's table agree.
        PerfFrom::Geomean => None,
    }
}

/// The host a result's power is taken from: the one its point ran against, `sut_host`,
/// or a net pair's `receiver_host` (a pair's receiver is its system under test: the
/// runner starts the service there, and the report takes its power as the pair's). None
/// when the result does not say.
fn own_sut(r: &ResultRecord) -> Option<&str> {
    ["sut_host", "receiver_host"]
        .iter()
        .find_map(|k| r.params.get(*k).and_then(|v| v.as_str()))
}

fn power_of(run: &RunRecord, results: &[&ResultRecord]) -> Result<Sourced, String> {
    // Hosts that are (or include) the system under test; all hosts only if the run names
    // no roles at all. A run whose roles name none (a net matrix's are `sender` and
    // `receiver`, and this machine's `controller`) must not average every host, the
    // controller included: each result's own system under test, or a refusal.
    let sut: Vec<&str> = run
        .hosts
        .iter()
        .filter(|h| h.role.contains("sut"))
        .map(|h| h.host.as_str())
        .collect();
    let roles_known = run.hosts.iter().any(|h| !h.role.is_empty());
    // Each sweep point's repetitions are averaged first, then the points: the report's
    // summary takes its power mean the same way, so a test with more valid repetitions
    // does not weigh more here than there.
    let mut per_point: Vec<(String, Vec<f64>)> = Vec::new();
    // The power source, zones and whether modelled, of the first point that had power,
    // and that point.
    let mut chosen: Option<((String, String, bool), String)> = None;
    let named = |(source, zones, modelled): &(String, String, bool)| {
        let named = model::power_source_named(run, source, zones, *modelled);
        if *modelled {
            format!("MODELLED {named}")
        } else {
            named
        }
    };
    // The host whose watts were taken (of the first point that had power).
    let mut chosen_host: Option<String> = None;
    let mut unlike: Option<String> = None;
    let mut components: Vec<String> = Vec::new();
    let mut missing: Vec<String> = Vec::new();
    for r in results {
        // A test of phases one after another: its watts are the mean over all of them,
        // its performance one phase's (the report gives it no perf/W), so a rack sized by
        // them holds servers of no one load.
        if let Some(why) = model::phases_of(&[r]) {
            return Err(format!(
                "run {}: `{}`: {why}: its power goes with none of its phases' performance; \
                 take the power from a test of one phase (mem --bw-threads all, one crypto \
                 --buffer-sizes), or give `power_w` in the plan (a key's signs and \
                 verifies are always two phases)",
                run.id,
                point_key(r)
            ));
        }
        let sut: Vec<&str> = match own_sut(r) {
            Some(h) => vec![h],
            None => sut.clone(),
        };
        if sut.is_empty() && roles_known {
            return Err(format!(
                "run {}: `{}` names no system under test (no host's role is `sut`, and no \
                 sut_host or receiver_host parameter): its power would be every host's, the \
                 controller's too",
                run.id,
                point_key(r)
            ));
        }
        for ts in &r.telemetry_summary {
            if !sut.is_empty() && !sut.contains(&ts.host.as_str()) {
                continue;
            }
            if let Some(m) = &ts.power_missing {
                if !missing.contains(m) {
                    missing.push(m.clone());
                }
            }
            // The one headline rule; a rack is filled by whole-server watts, so a
            // component figure (RAPL) is named in the refusal but never used.
            match model::power::headline(&ts.power) {
                Some(h) if h.whole_system => {
                    let key = (h.source.clone(), h.zones.join("+"), h.modelled);
                    let point = point_key(r);
                    match &chosen {
                        Some((c, first_point)) if c != &key => {
                            unlike.get_or_insert(format!(
                                "run {}: the power of `{point}` ({}) and of `{first_point}` ({}) \
                                 come from unlike sources: there is no one mean of them",
                                run.id,
                                named(&key),
                                named(c)
                            ));
                            continue;
                        }
                        Some(_) => {}
                        None => {
                            chosen = Some((key, point.clone()));
                            chosen_host = Some(ts.host.clone());
                        }
                    }
                    match per_point.iter_mut().find(|(k, _)| *k == point) {
                        Some((_, w)) => w.push(h.mean_watts),
                        None => per_point.push((point, vec![h.mean_watts])),
                    }
                }
                Some(h) => {
                    let z = h.named(run);
                    if !components.contains(&z) {
                        components.push(z);
                    }
                }
                None => {}
            }
        }
    }
    if let Some(why) = unlike {
        return Err(why);
    }
    // Power of some of the points only: their mean is not the power of the load the
    // performance figure covers (a meter that failed during `get` gave `set`'s watts
    // beside the mean of set and get). The report's summary shows no mean for it either.
    if let Some((_, with)) = &chosen {
        let without = results
            .iter()
            .map(|r| point_key(r))
            .find(|k| per_point.iter().all(|(p, _)| p != k));
        if let Some(without) = without {
            let why = if missing.is_empty() {
                String::new()
            } else {
                format!(" ({})", missing.join("; "))
            };
            return Err(format!(
                "run {}: `{without}` has no whole-server power{why}, where `{with}` has: a \
                 mean of some of the points is not the power of the performance figure; take \
                 the performance from the points with power (`test`, `params`), or give the \
                 platform's `power_w`",
                run.id
            ));
        }
    }
    // A chosen source means a point was recorded with it.
    match chosen {
        Some((key, _)) => {
            let means: Vec<f64> = per_point
                .iter()
                .map(|(_, w)| w.iter().sum::<f64>() / w.len() as f64)
                .collect();
            let mean = means.iter().sum::<f64>() / means.len() as f64;
            // A server's watts with its load generator's work in them, said where the
            // figure is used (acceptance M, 5: a TCO took them per server unsaid).
            let with_loadgen = chosen_host
                .filter(|h| {
                    results
                        .iter()
                        .any(|r| model::sender_beside(&run.hosts, r, h))
                })
                .map_or(String::new(), |h| {
                    format!(
                        " ({} also ran the load generator, whose work these watts include)",
                        model::host_display_name(&run.hosts, &h)
                    )
                });
            Ok(Sourced {
                value: mean,
                source: format!(
                    "run {}: {}{with_loadgen}, mean of {} point(s), each the mean of its \
                     repetitions",
                    run.id,
                    named(&key),
                    means.len()
                ),
                modelled: key.2,
                model: model::declared_power_model(run)
                    .filter(|_| key.2)
                    .map(str::to_string),
                unit: Some("W".to_string()),
                run: Some(run.id.clone()),
            })
        }
        _ if !components.is_empty() => Err(format!(
            "run {} measured only component power ({}), not whole-server power",
            run.id,
            components.join(", ")
        )),
        _ if !missing.is_empty() => Err(format!("run {}: {}", run.id, missing.join("; "))),
        _ => Err(format!("run {} has no power readings", run.id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A whole-server power summary of `host` at `watts`.
    fn summary(host: &str, watts: f64) -> serde_json::Value {
        json!({
            "host": host, "samples": 3, "cpus": [], "ctxt_per_s": 0.0, "intr_per_s": 0.0,
            "nics": [], "disks": [], "mean_freq_mhz": null, "procs": [],
            "power": [{"source": "meter", "zone": "system", "mean_watts": watts,
                       "max_watts": watts, "whole_system": true, "modelled": false}],
        })
    }

    fn result(params: serde_json::Value) -> ResultRecord {
        serde_json::from_value(json!({
            "workload": "net", "test": "tcp", "step": 0, "repetition": 0,
            "params": params, "headline": "throughput_gbps",
            "started_at": "2026-01-01T00:00:00Z", "duration_s": 10.0,
            "metrics": [], "missing": [], "histograms": [], "telemetry": [],
            "telemetry_summary": [summary("local", 50.0), summary("rbh1", 100.0),
                                  summary("rbh2", 200.0)],
            "flags": [], "status": "ok",
        }))
        .unwrap()
    }

    fn run(roles: &[(&str, &str)]) -> RunRecord {
        let hosts: Vec<serde_json::Value> = roles
            .iter()
            .map(|(h, r)| json!({"host": h, "role": r, "facts": {}}))
            .collect();
        serde_json::from_value(json!({
            "format_version": 1, "id": "r1", "created_at": "2026-01-01T00:00:00Z",
            "rackbench_version": "0", "command": "", "plan": {}, "hosts": hosts,
            "results": [], "status": "ok",
        }))
        .unwrap()
    }

    /// A result flagged `low_hit_ratio` gave a TCO its figures unmarked, where the
    /// report shows the flag beside them.
    #[test]
    fn the_warnings_of_the_results_taken_reach_the_tco() {
        let mut run = run(&[("local", "controller"), ("rbh1", "sut")]);
        let mut r = result(json!({"sut_host": "rbh1"}));
        r.metrics = vec![model::Metric::new("throughput_gbps", 9.0, "Gbit/s")];
        r.flags = vec![
            model::Flag::warning("low_hit_ratio", "68% of GETs hit"),
            model::Flag::warning("other_load", "busy"),
        ];
        run.results = vec![r];
        let plan = crate::Plan::from_toml(
            "years = 3\nenergy_price_per_kwh = 0.1\n[rack]\npower_budget_w = 5000\n\
             rack_units = 42\n[[platform]]\nname = \"A\"\nrun = \"r1\"\nperf_from = \"max\"\n\
             bom = [{ name = \"S\", unit_cost = 1000 }]\n\
             [[platform]]\nname = \"B\"\nperf = 9\npower_w = 100\nbom = 0\n",
        )
        .unwrap();
        let fr = from_run(&run, &plan.platforms[0]);
        assert!(fr.problems.is_empty(), "{:?}", fr.problems);
        assert_eq!(fr.warnings, ["low_hit_ratio (tcp)", "other_load (tcp)"]);
        let runs = [("A".to_string(), fr)].into_iter().collect();
        // B's 9 is in no unit until the plan says it: not set beside A's Gbit/s.
        let e = crate::evaluate(&plan, &runs).unwrap_err().to_string();
        assert!(
            e.contains(
                "platform `B`'s performance is given in the plan, platform `A`'s taken \
                 from a run in Gbit/s: say the unit"
            ),
            "{e}"
        );
        let mut plan = plan;
        plan.perf_unit = Some("Gbit/s".into());
        let t = crate::evaluate(&plan, &runs).unwrap();
        let (_, head, _) = crate::render::cells(&t);
        assert!(head.iter().any(|h| h == "A ⚠"), "{head:?}");
        assert!(head.iter().any(|h| h == "B"), "{head:?}");
        let notes = crate::render::footnotes(&t);
        assert!(
            notes.iter().any(|n| n.starts_with(
                "⚠ A: the results its figures were taken from carry warnings: \
                 low_hit_ratio (tcp), other_load (tcp) (`rackbench show r1` says why)"
            )),
            "{notes:?}"
        );
    }

    /// A modelled power names its model: two platforms' `MODELLED model system` read as
    /// one source at 60:160 and 50:200 W.
    #[test]
    fn a_modelled_power_names_its_model() {
        let mut run = run(&[("local", "controller"), ("rbh1", "sut")]);
        run.plan = json!({"run": {"power_model": "60:160"}});
        let mut r = result(json!({"sut_host": "rbh1"}));
        r.metrics = vec![model::Metric::new("throughput_gbps", 9.0, "Gbit/s")];
        for s in &mut r.telemetry_summary {
            s.power[0].source = "model".into();
            s.power[0].modelled = true;
        }
        run.results = vec![r];
        let plan = crate::Plan::from_toml(
            "years = 3\nenergy_price_per_kwh = 0.1\n[rack]\npower_budget_w = 5000\n\
             rack_units = 42\n[[platform]]\nname = \"A\"\nrun = \"r1\"\n\
             bom = [{ name = \"S\", unit_cost = 1000 }]\n",
        )
        .unwrap();
        let power = from_run(&run, &plan.platforms[0]).power_w.unwrap();
        assert!(power.modelled, "{power:?}");
        // The model itself, for the TCO's note on two platforms of two models.
        assert_eq!(power.model.as_deref(), Some("60:160"));
        assert!(
            power.source.contains("MODELLED model system (60:160 W)"),
            "{}",
            power.source
        );
    }

    /// Repetitions of a point whose headline varies above the report's threshold reach
    /// the TCO as `high_variation`, as the report flags them (cv 29% was shown as a
    /// steady figure); steady ones do not.
    #[test]
    fn repetitions_that_vary_reach_the_tco_as_high_variation() {
        let plan = crate::Plan::from_toml(
            "years = 3\nenergy_price_per_kwh = 0.1\n[rack]\npower_budget_w = 5000\n\
             rack_units = 42\n[[platform]]\nname = \"A\"\nrun = \"r1\"\n\
             bom = [{ name = \"S\", unit_cost = 1000 }]\n",
        )
        .unwrap();
        let given = crate::Plan::from_toml(
            "years = 3\nenergy_price_per_kwh = 0.1\n[rack]\npower_budget_w = 5000\n\
             rack_units = 42\n[[platform]]\nname = \"A\"\nrun = \"r1\"\nperf = 9\n\
             bom = [{ name = \"S\", unit_cost = 1000 }]\n",
        )
        .unwrap();
        let of_plan = |plan: &crate::Plan, values: &[f64]| {
            let mut run = run(&[("local", "controller"), ("rbh1", "sut")]);
            run.results = values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let mut r = result(json!({"sut_host": "rbh1"}));
                    r.repetition = i as u32;
                    r.metrics = vec![model::Metric::new("throughput_gbps", *v, "Gbit/s")];
                    r
                })
                .collect();
            from_run(&run, &plan.platforms[0]).warnings
        };
        let of = |values: &[f64]| of_plan(&plan, values);
        // cv 29%.
        assert_eq!(of(&[6.0, 9.0, 11.0]), ["high_variation (tcp)"]);
        // The plan gives the performance: the run's headline is not used.
        assert!(of_plan(&given, &[6.0, 9.0, 11.0]).is_empty());
        // cv 5%.
        assert!(of(&[9.0, 9.5, 10.0]).is_empty());
    }

    /// What a run could not give is said only where the plan needs it: power given in
    /// the plan, a run without a power source leaves its absence out of the performance's
    /// error (acceptance pass, s27: "no performance: ... no power source found: rapl:
    /// ...").
    #[test]
    fn a_figure_the_plan_gives_is_no_problem_of_the_run() {
        let mut run = run(&[("local", "controller"), ("rbh1", "sut")]);
        let mut r = result(json!({"sut_host": "rbh1"}));
        r.workload = "mem".into();
        r.test = "latency".into();
        r.headline = "ram_latency_ns".into();
        r.metrics = vec![model::Metric::new("ram_latency_ns", 160.0, "ns")];
        r.telemetry_summary.iter_mut().for_each(|t| t.power.clear());
        run.results = vec![r];
        let platform = |extra: &str| {
            crate::Plan::from_toml(&format!(
                "years = 3\nenergy_price_per_kwh = 0.1\n[rack]\npower_budget_w = 5000\n\
                 rack_units = 42\n[[platform]]\nname = \"A\"\nrun = \"r1\"\n{extra}\n\
                 bom = [{{ name = \"S\", unit_cost = 1000 }}]\n"
            ))
            .unwrap()
            .platforms
            .remove(0)
        };
        let given = from_run(&run, &platform("power_w = 200"));
        assert_eq!(given.problems.len(), 1, "{:?}", given.problems);
        assert!(
            given.problems[0].contains("better lower"),
            "{:?}",
            given.problems
        );
        let both = from_run(&run, &platform(""));
        assert_eq!(both.problems.len(), 2, "{:?}", both.problems);
        // Performance given, a latency headline is no problem either.
        let perf = from_run(&run, &platform("perf = 1000"));
        assert!(
            perf.problems.iter().all(|p| !p.contains("better lower")),
            "{:?}",
            perf.problems
        );
    }

    /// A test of phases one after another (mem's 1 and all threads) has watts over
    /// all of them and a headline of one: its power sized a rack of servers at no one
    /// load; refused, saying why and what to run.
    #[test]
    fn a_test_of_phases_gives_no_power() {
        let run = run(&[("local", "controller"), ("rbh1", "sut")]);
        let mut r = result(json!({"sut_host": "rbh1"}));
        r.workload = "mem".into();
        r.test = "bandwidth".into();
        assert!(power_of(&run, &[&r]).is_ok());
        for t in ["1", "16"] {
            r.metrics
                .push(model::Metric::new("triad_gb_per_s", 10.0, "GB/s").label("threads", t));
        }
        let e = power_of(&run, &[&r]).unwrap_err();
        assert!(
            e.contains("phases one after another (threads 1, 16)")
                && e.contains("--bw-threads all"),
            "{e}"
        );
    }

    /// A meter that failed during `get` of `-t set,get`: set's watts were taken as the
    /// power of the mean of set and get ("mean of 1 point(s)"), where the report's
    /// summary shows none.
    #[test]
    fn power_of_some_of_the_points_is_refused() {
        let run = run(&[("local", "controller"), ("rbh1", "sut")]);
        let set = result(json!({}));
        let mut get = result(json!({}));
        get.test = "get".into();
        for t in &mut get.telemetry_summary {
            t.power.clear();
            t.power_missing = Some("the meter failed: exit 1".into());
        }
        let e = power_of(&run, &[&set, &get]).unwrap_err();
        assert!(
            e.contains(
                "`get` has no whole-server power (the meter failed: exit 1), where `tcp` has"
            ),
            "{e}"
        );
        // Both with power: the mean of the two points (100 W and 300 W).
        let mut get = result(json!({}));
        get.test = "get".into();
        get.telemetry_summary[1] = serde_json::from_value(summary("rbh1", 300.0)).unwrap();
        let p = power_of(&run, &[&set, &get]).unwrap();
        assert!((p.value - 200.0).abs() < 1e-9, "{}", p.value);
        assert!(p.source.contains("mean of 2 point(s)"), "{}", p.source);
    }

    /// A net pair's power is its receiver's: the run's roles are sender, receiver and
    /// controller, none `sut`, and the power used to be the mean of every host's, the
    /// controller's included (116.7 W here).
    #[test]
    fn a_net_pairs_power_is_its_receivers() {
        let run = run(&[
            ("local", "controller"),
            ("rbh1", "sender+receiver"),
            ("rbh2", "sender+receiver"),
        ]);
        let r = result(json!({"sender_host": "rbh1", "receiver_host": "rbh2"}));
        let p = power_of(&run, &[&r]).unwrap();
        assert!((p.value - 200.0).abs() < 1e-9, "{}", p.value);
        // Each end sends in the other pair, not in this one: no generator's work.
        assert!(!p.source.contains("load generator"), "{}", p.source);
        // No result names its system under test, and no role is `sut`: refused.
        let r = result(json!({}));
        let e = power_of(&run, &[&r]).unwrap_err();
        assert!(e.contains("names no system under test"), "{e}");
        // A run with a `sut` role: that host.
        let run = self::run(&[
            ("local", "controller"),
            ("rbh1", "sut"),
            ("rbh2", "loadgen"),
        ]);
        let p = power_of(&run, &[&r]).unwrap();
        assert!((p.value - 100.0).abs() < 1e-9, "{}", p.value);
        assert!(!p.source.contains("load generator"), "{}", p.source);
        // The server host also ran the load generator: its watts are taken, and said to
        // hold the generator's work (acceptance M, 5).
        let run = self::run(&[("local", "controller"), ("rbh1", "sut+loadgen")]);
        let p = power_of(&run, &[&r]).unwrap();
        assert!((p.value - 100.0).abs() < 1e-9, "{}", p.value);
        assert!(
            p.source.contains(
                "system (rbh1 also ran the load generator, whose work these watts include), mean"
            ),
            "{}",
            p.source
        );
    }
}
