//! Issue 13 item 8, "the report reads at a glance": titles, legends, the disclosure
//! table, power notes, crypto/net/mem views, Markdown chart links and automatic
//! comparisons on reports of many runs.

mod common;

use common::{kv_run, Spec};
use model::RunRecord;
use rackbench_report as report;

/// `n` kv runs of the fixture sweep, labelled `run0`.. with distinct ids and seeds.
fn many_runs(n: usize) -> Vec<RunRecord> {
    (0..n)
        .map(|i| {
            let label: &'static str = Box::leak(format!("run{i}").into_boxed_str());
            let id: &'static str = Box::leak(format!("20261120T23{i:04}-aaaaaa").into_boxed_str());
            kv_run(&Spec {
                label,
                id,
                seed: i as u64 + 1,
                reps: 1,
                ..Spec::default()
            })
        })
        .collect()
}

#[test]
fn title_of_many_runs_is_short() {
    let runs = many_runs(16);
    let h = report::html(&runs, None);
    let title = "rackbench report: 16 runs: run0, run1, \u{2026} (+14 more)";
    assert!(h.contains(&format!("<title>{title}</title>")), "html title");
    assert!(!h.contains("run0 vs run1"));
    let m = report::markdown(&runs, None);
    assert!(m.contains(&format!("# {title}\n")), "markdown title");
    let h = report::html(&runs[..2], None);
    assert!(h.contains("<title>rackbench report: run0 vs run1</title>"));
}

#[test]
fn legends_show_only_what_varies_among_their_series() {
    let mut runs = common::two_platforms();
    for r in runs.iter_mut().flat_map(|r| r.results.iter_mut()) {
        r.params.insert("value_size".into(), serde_json::json!(10));
    }
    let charts = report::svg_charts(&runs);
    for (name, svg) in &charts {
        assert!(
            !svg.contains("value_size=10"),
            "{name} repeats a fixed parameter"
        );
    }
    let latency = &charts.iter().find(|c| c.0 == "kv_latency.svg").unwrap().1;
    // Both runs peak at instances=4: the legend names the run, test and pipeline only.
    assert!(
        latency.contains(">x86-a \u{b7} set pipeline=1<"),
        "{latency}"
    );
    assert!(!latency.contains("instances=4"));
    // One chart per test: the test and its pipeline are the title, the legend the runs.
    let buckets = &charts
        .iter()
        .find(|c| c.0 == "kv_buckets_set_pipeline_1.svg")
        .unwrap()
        .1;
    assert!(buckets.contains(">arm-b<") && !buckets.contains("pipeline=1)"));
}

#[test]
fn per_cpu_breakdown_for_every_test_not_only_the_fastest() {
    // A net-like run: a fast TCP test and a slow UDP test, each with per-CPU telemetry.
    let mut run = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    run.results.retain(|r| r.params["pipeline"] == 1);
    for (r, (test, gbit)) in run.results.iter_mut().zip([("tcp", 15.0), ("udp", 1.7)]) {
        r.workload = "net".into();
        r.test = test.into();
        r.params.clear();
        r.headline = "throughput_gbit_per_s".into();
        r.metrics = vec![model::Metric::new("throughput_gbit_per_s", gbit, "Gbit/s")];
    }
    let charts = report::svg_charts(std::slice::from_ref(&run));
    let cpu: Vec<&str> = charts
        .iter()
        .filter(|c| c.0.starts_with("cpu_"))
        .map(|c| c.0.as_str())
        .collect();
    assert_eq!(cpu, ["cpu_x86_a_net_tcp.svg", "cpu_x86_a_net_udp.svg"]);
    let h = report::html(&[run], None);
    assert!(h.contains("per-CPU utilisation on local during net udp"));
}

/// A run of capacity tests only (a levels test) has per-CPU telemetry over its steps: the
/// report shows it, where it said "No per-CPU telemetry".
#[test]
fn per_cpu_breakdown_of_a_levels_run() {
    let mut run = kv_run(&Spec {
        reps: 1,
        instances: &[1, 2],
        ..Spec::default()
    });
    run.results
        .retain(|r| r.test == "get" && r.params["pipeline"] == 1);
    for r in &mut run.results {
        r.test = "levels".into();
        r.params.remove("pipeline");
        r.headline = "overall_reply_rate_per_w".into();
        r.histograms.clear();
        r.metrics = vec![
            model::Metric::new("overall_reply_rate_per_w", 400.0, "ops/s/W"),
            model::Metric::new("reply_rate_per_s", 50_000.0, "ops/s")
                .label("phase", "levels")
                .label("level", "100%"),
        ];
    }
    assert!(run.results[0].capacity_phase().is_some());
    let h = report::html(std::slice::from_ref(&run), None);
    let cpu = &h[h.find(r#"id="cpu""#).unwrap()..];
    assert!(!cpu.contains("No per-CPU telemetry"), "{cpu}");
    assert!(
        cpu.contains(
            "per-CPU utilisation on local during kv levels instances=2 (mean over all its steps)"
        ),
        "{cpu}"
    );
    let m = report::markdown(std::slice::from_ref(&run), None);
    let cpu = &m[m.find("## CPU utilisation").unwrap()..];
    assert!(!cpu.contains("No per-CPU telemetry"), "{cpu}");
    assert!(cpu.contains("during kv levels instances=1 (mean over all its steps)"));
    // Its summary has no test (capacity tests are per step): no mean row of nothing.
    assert!(!m.contains("**Geometric mean**"), "{m}");
    assert!(!h.contains("<td>Geometric mean</td>"));
}

/// Acceptance pass F, F19: a run of only a capacity test had a summary table with a
/// header and no row in Markdown (and HTML); the table is left out and the note says why.
#[test]
fn capacity_only_run_has_no_empty_summary_table() {
    let mut run = kv_run(&Spec {
        label: "<script>x</script>&\"|",
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    run.results
        .retain(|r| r.test == "get" && r.params["pipeline"] == 1);
    for r in &mut run.results {
        r.test = "levels".into();
        r.params.remove("pipeline");
        r.headline = "overall_reply_rate_per_w".into();
        r.histograms.clear();
        r.metrics = vec![
            model::Metric::new("overall_reply_rate_per_w", 400.0, "ops/s/W"),
            model::Metric::new("reply_rate_per_s", 50_000.0, "ops/s")
                .label("phase", "levels")
                .label("level", "100%"),
        ];
    }
    let m = report::markdown(std::slice::from_ref(&run), None);
    let wl = &m[m.find("## Workload: kv").unwrap()..];
    let wl = &wl[..wl.find("\n## ").map_or(wl.len(), |i| i + 1)];
    assert!(!wl.contains("\n| Test |"), "{wl}");
    assert!(!wl.contains("Not in this table"), "{wl}");
    assert!(
        wl.contains(
            "No summary table: this workload ran only capacity tests: levels (capacity tests"
        ),
        "{wl}"
    );
    let h = report::html(std::slice::from_ref(&run), None);
    assert!(!h.contains("Summary of measured data"), "{h}");
    assert!(h.contains("No summary table: this workload ran only capacity tests: levels"));
    // A run with other tests keeps its table and says what it lacks.
    let mut both = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    both.results.push(run.results[0].clone());
    let m = report::markdown(std::slice::from_ref(&both), None);
    assert!(m.contains("\n| Test |"));
    assert!(m.contains("Not in this table: levels"));
    // Its other tests left out by --tests: it did not run only capacity tests (review H, 17).
    let sel = report::Selection {
        tests: vec!["levels".into()],
        ..Default::default()
    };
    let s = report::summary_with(std::slice::from_ref(&both), &sel);
    assert!(s.rows.is_empty(), "{:?}", s.rows);
    assert!(
        s.notes.iter().any(|n| n.starts_with(
            "No summary table: the tests chosen with --tests are capacity tests: levels"
        )),
        "{:?}",
        s.notes
    );
    assert!(!s.notes.iter().any(|n| n.contains("ran only capacity")));
    assert!(report::html(std::slice::from_ref(&both), None).contains("Summary of measured data"));
}

/// The Markdown has the HTML's per-CPU breakdown (as numbers) and its "% of requests over
/// threshold" table, with the same figures.
#[test]
fn markdown_has_the_thresholds_and_per_cpu_tables() {
    let runs = common::two_platforms();
    let m = report::markdown(&runs, None);
    let h = report::html(&runs, None);
    // Thresholds: one row per threshold and per test, each run side by side.
    let t = &m[m.find("### Latency thresholds").unwrap()..];
    assert!(t.contains("| Test | Threshold | x86-a | arm-b |"), "{t}");
    let groups = report::charts::thresholds(&runs, &report::Selection::default());
    let (what, cells) = &groups[0].rows[0];
    let first = format!(
        "| {} | {} | {} | {} |",
        report::fmt::md(&groups[0].test),
        report::fmt::md(what),
        cells[0],
        cells[1]
    );
    assert!(t.contains(&first), "{first} in {t}");
    assert!(cells[0].ends_with('%'));
    // The HTML shows the same cells.
    assert!(h.contains(&format!(r#"<td class="n">{}</td>"#, cells[0])));
    assert!(t.contains("|  | weighted mean |"), "{t}");
    // Per-CPU: CPU 1 of the fixture is 18% usr, 62% sys, 9% soft, 9.5% idle.
    let cpu = &m[m.find("## CPU utilisation").unwrap()..];
    assert!(
        cpu.contains("| CPU | %usr | %nice | %sys | %irq | %soft | %iowait | %steal | %idle |"),
        "{cpu}"
    );
    assert!(
        cpu.contains("| 1 | 18.0 | 0.0 | 62.0 | 0.6 | 9.0 | 0.2 | 0.7 | 9.5 |"),
        "{cpu}"
    );
    let shown = report::charts::cpu_breakdowns(&runs, &report::Selection::default()).shown;
    assert!(!shown.is_empty());
    for b in &shown {
        assert!(cpu.contains(&report::fmt::md(&b.title())), "{}", b.title());
        assert!(h.contains(&report::fmt::esc(&b.title())), "{}", b.title());
    }
}

#[test]
fn disclosure_shows_what_differs_and_folds_what_is_the_same() {
    let mut runs = many_runs(4);
    runs[3].hosts[0]
        .facts
        .insert("os.kernel".into(), model::Fact::known("6.12.0-custom"));
    let h = report::html(&runs, None);
    let sys = &h[h.find(r#"id="disclosure""#).unwrap()..];
    let table = &sys[..sys.find("</table>").unwrap()];
    assert!(table.contains("<code>os.kernel</code>") && table.contains("6.12.0-custom"));
    assert!(!table.contains("cpu.model"), "same on every run: folded");
    let n = 12; // the fixture's facts, less the kernel
    assert!(sys.contains(&format!(
        "<details><summary>same on every run ({n} facts)</summary>"
    )));
    assert!(sys.contains("<li><code>cpu.model</code>: AMD EPYC 7B13</li>"));
    // The fact names do not wrap; the table scrolls sideways.
    assert!(h.contains("th.fact,td.fact{white-space:nowrap;min-width:"));
    assert!(sys.contains(r#"<div class="scroll"><table class="disclosure">"#));
    let m = report::markdown(&runs, None);
    assert!(m.contains(&format!("Same on every run ({n} facts):")));
    // One run: nothing to fold.
    let h = report::html(&runs[..1], None);
    assert!(!h.contains("same on every run"));
    // One run of several hosts: its columns are hosts, not runs.
    let mut one = runs[0].clone();
    let mut other = one.hosts[0].clone();
    other.host = "rbh2".into();
    one.hosts.push(other);
    let h = report::html(std::slice::from_ref(&one), None);
    assert!(h.contains("<summary>same on every host ("), "{h}");
}

/// Acceptance pass F, F17: byte counts in the Systems table read "0.0 GiB (49152)"; they
/// are scaled by binary prefix as the mem view writes them, the exact count beside only
/// when the scaled figure is rounded. The caches' sizes (bytes in sysfs) too.
#[test]
fn byte_facts_are_scaled_by_binary_prefix() {
    let mut runs = many_runs(2);
    for (k, a, b) in [
        ("cpu.cache.l1_bytes", "49152", "32768"),
        ("cpu.cache.l2", "2097152", "1048576"),
        ("cpu.cache.l3_bytes", "314572800", "33554432"),
        ("server.static_file_bytes", "1024", "100"),
        ("mem.total_bytes", "25324732416", "8589934592"),
        // Review H, 13: 1000-1023 of a unit read "1k GiB", "1.01k GiB".
        ("mem.big_bytes", "1073741824000", "1081000000000"),
    ] {
        runs[0].hosts[0]
            .facts
            .insert(k.into(), model::Fact::known(a));
        runs[1].hosts[0]
            .facts
            .insert(k.into(), model::Fact::known(b));
    }
    let m = report::markdown(&runs, None);
    let sys = &m[m.find("## Systems").unwrap()..];
    for row in [
        "| cpu.cache.l1\\_bytes | 48 KiB | 32 KiB |",
        "| cpu.cache.l2 | 2 MiB | 1 MiB |",
        "| cpu.cache.l3\\_bytes | 300 MiB | 32 MiB |",
        "| server.static\\_file\\_bytes | 1 KiB | 100 B |",
        "| mem.total\\_bytes | 23.6 GiB (25324732416 B) | 8 GiB |",
        "| mem.big\\_bytes | 1,000 GiB | 1,007 GiB (1081000000000 B) |",
    ] {
        assert!(sys.contains(row), "{row} in {sys}");
    }
    assert!(!sys.contains("0.0 GiB") && !sys.contains("k GiB"));
    let h = report::html(&runs, None);
    assert!(
        h.contains("<td>48 KiB</td>") || h.contains(">48 KiB<"),
        "{h}"
    );
}

/// Acceptance pass F, F18: chart titles said the metric's id ("kv: ops_per_s per test",
/// "kv: ops_per_s vs instances"); they say it in the tables' words, with the unit.
#[test]
fn chart_titles_use_the_readers_words() {
    let runs = many_runs(2);
    let titles: Vec<String> = report::charts::charts(&runs)
        .into_iter()
        .map(|c| c.title)
        .collect();
    assert!(
        titles
            .iter()
            .any(|t| t.starts_with("kv: throughput (ops/s) per test")),
        "{titles:?}"
    );
    assert!(
        titles
            .iter()
            .any(|t| t == "kv: throughput (ops/s) vs instances"),
        "{titles:?}"
    );
    assert!(
        !titles.iter().any(|t| t.contains("ops_per_s")),
        "{titles:?}"
    );
    let h = report::html(&runs, None);
    assert!(h.contains("kv: throughput (ops/s) per test"));
    assert!(!h.contains("ops_per_s per test") && !h.contains("ops_per_s vs"));
    // A latency headline (less is better) is called one.
    assert_eq!(
        report::charts::headline_words("latency_ns", "ns", &[]),
        "latency (ns)"
    );
}

/// A test with no headline figure in any column has no unit: it made the summary's
/// units differ (acceptance pass F, F18: said "(, GB/s)", then "no unit for kv set"), so
/// there was no geometric mean at all, nor a TCO over the run. It is left out of the
/// means, which are over the tests that have figures, and said to be.
#[test]
fn a_test_without_a_figure_is_left_out_of_the_geometric_mean() {
    let mut runs = many_runs(1);
    for r in &mut runs[0].results {
        if r.test == "set" {
            let h = r.headline.clone();
            r.metrics.retain(|m| m.name != h);
        }
    }
    let s = report::summary(&runs);
    assert_eq!(s.geomean_note, None);
    assert_eq!(s.unit, "ops/s");
    assert_eq!(s.left_out, ["kv set pipeline=1", "kv set pipeline=100"]);
    let gets: Vec<f64> = s
        .rows
        .iter()
        .filter(|r| r.label.starts_with("kv get"))
        .map(|r| r.perf[0].unwrap())
        .collect();
    let want = (gets[0] * gets[1]).sqrt();
    let got = s.geomean[0].unwrap();
    assert!((got - want).abs() < 1e-6 * want, "{got} vs {want}");
}

/// A fact one host has and another has not says why on the other, never a bare `-`:
/// a net.core sysctl a network namespace lacks carries its reason (the telemetry's), and
/// one a disclosure has no entry for (a run stored before it was collected) is said to be
/// not recorded.
#[test]
fn a_fact_missing_on_one_host_says_why() {
    let mut runs = many_runs(3);
    let key = "sysctl.net.core.busy_poll";
    let netns = "not present in this network namespace: the kernel keeps it for the \
         initial namespace only, whose value applies here";
    runs[0].hosts[0]
        .facts
        .insert(key.into(), model::Fact::known("50"));
    runs[1].hosts[0]
        .facts
        .insert(key.into(), model::Fact::unknown(netns));
    let h = report::html(&runs, None);
    let sys = &h[h.find(r#"id="disclosure""#).unwrap()..];
    let table = &sys[..sys.find("</table>").unwrap()];
    let row = &table[table.find(&format!("<code>{key}</code>")).unwrap()..];
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(row.contains("<td>50</td>"), "{row}");
    assert!(
        row.contains(&format!("<td>unknown ({})</td>", report::fmt::esc(netns))),
        "{row}"
    );
    assert!(
        row.contains(&format!("<td>{}</td>", report::hosts_view::NOT_RECORDED)),
        "{row}"
    );
    assert!(!row.contains("<td>-</td>"), "{row}");
    let m = report::markdown(&runs, None);
    assert!(m.contains(report::hosts_view::NOT_RECORDED), "{m}");
}

#[test]
fn power_absent_reason_is_said_once_not_per_result() {
    let why = "no power source found: a VM";
    let runs: Vec<RunRecord> = many_runs(3)
        .into_iter()
        .map(|mut r| {
            for x in &mut r.results {
                x.telemetry_summary[0].power.clear();
                x.telemetry_summary[0].power_missing = Some(why.into());
            }
            r.idle_power.clear();
            r
        })
        .collect();
    // Once under the summary table, once under all results (its Power column), once
    // where the power chart would be: never per result.
    let h = report::html(&runs, None);
    assert_eq!(h.matches(why).count(), 3, "html");
    assert!(h.contains(&format!("* Power absent on every run: {why}")));
    let m = report::markdown(&runs, None);
    // Without chart links, the chart's note is not there: under the summary and under
    // all results.
    assert_eq!(m.matches(why).count(), 2, "markdown");
    assert!(m.contains(&format!("\\* Power absent on every run: {why}")));
}

#[test]
fn markdown_links_charts_only_where_they_were_written() {
    let runs = common::two_platforms();
    // Not told where the charts are: no links to files that may not exist.
    let m = report::markdown(&runs, None);
    assert!(!m.contains(".svg)"), "links a chart it did not write");
    assert_eq!(m.matches(report::NO_CHARTS).count(), 1);
    // Told the directory: every linked file is one svg_charts writes, under it.
    let m = report::markdown_with_charts(&runs, None, Some("my charts"));
    assert!(!m.contains(report::NO_CHARTS));
    let written: Vec<String> = report::svg_charts(&runs)
        .into_iter()
        .map(|(name, _)| format!("my%20charts/{name}"))
        .collect();
    let links: Vec<&str> = m
        .lines()
        .filter_map(|l| l.strip_prefix("- !["))
        .filter_map(|l| l.rsplit_once("](").map(|(_, t)| t.trim_end_matches(')')))
        .collect();
    assert!(links.contains(&"my%20charts/kv_bars.svg"), "{links:?}");
    for l in links {
        assert!(written.iter().any(|w| w == l), "{l} is not a written file");
    }
}

/// Labels whose file-name slugs meet (`Arm 1`, `arm-1`) get a chart file each: none is
/// written over another.
#[test]
fn charts_of_labels_that_slug_alike_get_files_of_their_own() {
    let mut runs = common::two_platforms();
    runs[0].label = Some("Arm 1".into());
    runs[1].label = Some("arm-1".into());
    let names: Vec<String> = report::svg_charts(&runs)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let unique: std::collections::HashSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    assert!(
        names.iter().any(|n| n.starts_with("cpu_arm_1")),
        "{names:?}"
    );
}

/// Tests counted in different units (crypto's signs/s and MB/s) never share an axis: one
/// bar chart and one sweep chart per headline and unit.
#[test]
fn tests_in_different_units_get_charts_of_their_own() {
    let mut runs = vec![common::kv_run(&common::Spec::default())];
    // The `get` results become a test counted in another unit.
    for r in runs[0].results.iter_mut().filter(|r| r.test == "get") {
        r.headline = "throughput_mb_per_s".into();
        let v = r.headline_value().unwrap_or(1.0);
        r.metrics.push(model::Metric::new(
            "throughput_mb_per_s",
            v / 1000.0,
            "MB/s",
        ));
    }
    let charts = rackbench_report::charts::charts(&runs);
    let bars: Vec<&str> = charts
        .iter()
        .filter(|c| c.file.starts_with("kv_bars"))
        .map(|c| c.file.as_str())
        .collect();
    assert_eq!(bars.len(), 2, "{bars:?}");
    for c in charts.iter().filter(|c| c.file.starts_with("kv_bars")) {
        let svg = c.svg.as_deref().unwrap();
        assert!(
            !(svg.contains("MB/s") && svg.contains(">ops/s<")),
            "{} mixes units",
            c.file
        );
    }
}

/// Acceptance pass F, F11: warnings vanished from line charts (only bar charts had the ⚠
/// mark): a flagged point is drawn hollow with a ⚠, its warnings' codes in its tooltip,
/// and the chart (the SVG and its caption) says how many of its points carry one.
#[test]
fn flagged_points_are_marked_on_line_charts() {
    let mut runs = vec![kv_run(&Spec {
        label: "<script>x</script>&\"|",
        reps: 1,
        ..Spec::default()
    })];
    // A hostile flag code is escaped too.
    runs[0].results[0]
        .flags
        .push(model::Flag::warning("<b>odd</b>&", "a warning"));
    let charts = report::charts::charts(&runs);
    let c = charts
        .iter()
        .find(|c| c.title == "kv: throughput (ops/s) vs instances")
        .expect("the sweep chart");
    let svg = c.svg.as_deref().unwrap();
    // The fixture flags pipeline=1 at 4 instances (set and get: 2 points), and the
    // first result (set pipeline=1 at 1 instance): 3 of the 12 points.
    assert_eq!(
        svg.matches(r#"<circle class="flagged""#).count(),
        3,
        "{svg}"
    );
    assert!(svg.contains("&#9888; client_bound</title>"), "{svg}");
    assert!(
        svg.contains("&#9888; &lt;b&gt;odd&lt;/b&gt;&amp;</title>"),
        "{svg}"
    );
    assert!(!svg.contains("<b>odd"));
    let note = "⚠ 3 of 12 points carry warnings (hollow markers; the tables say which)";
    assert!(svg.contains(note), "{svg}");
    assert_eq!(c.note.as_deref(), Some(note));
    let h = report::html(&runs, None);
    assert!(h.contains(&format!(r#"<span class="note">{note}</span>"#)));
    // The power and perf/W sweeps too: the same 3 points (each drawn twice on the power
    // chart, as W and as W above idle; the caption counts points).
    let power = charts
        .iter()
        .find(|c| c.title.starts_with("kv: power vs instances"))
        .expect("the power sweep");
    let svg = power.svg.as_deref().unwrap();
    assert_eq!(
        svg.matches(r#"<circle class="flagged""#).count(),
        6,
        "{svg}"
    );
    assert!(
        power.note.as_deref().unwrap_or("").contains(note),
        "{:?}",
        power.note
    );
    // The SVG, read without the caption, says what the caption says: points, not markers
    // (it said "6 of 24" beside "3 of 12", review H, 15).
    assert!(svg.contains(note), "{svg}");
    assert!(!svg.contains("6 of 24"), "{svg}");
    let perw = charts
        .iter()
        .find(|c| c.title.starts_with("kv: perf/W vs instances"))
        .expect("the perf/W sweep");
    let svg = perw.svg.as_deref().unwrap();
    assert_eq!(
        svg.matches(r#"<circle class="flagged""#).count(),
        3,
        "{svg}"
    );
    assert!(svg.contains(note), "{svg}");
    // A chart none of whose points is flagged says nothing.
    let mut quiet = runs.clone();
    for r in &mut quiet[0].results {
        r.flags.clear();
    }
    let charts = report::charts::charts(&quiet);
    let c = charts
        .iter()
        .find(|c| c.title == "kv: throughput (ops/s) vs instances")
        .unwrap();
    assert!(!c.svg.as_deref().unwrap().contains("flagged"));
    assert_eq!(c.note, None);
}

/// K13: the two figures of a telemetry cell are printed alike: a disk that wrote 4.1 kB/s
/// and read nothing read `0.00 / 0.00410` MB/s, two precisions in one cell.
#[test]
fn a_telemetry_cells_two_figures_have_the_same_places() {
    let mut run = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    for r in &mut run.results {
        for t in &mut r.telemetry_summary {
            t.nics = vec![];
            t.disks = vec![model::DiskRate {
                name: "vda".into(),
                reads_per_s: 0.0,
                writes_per_s: 1.0,
                read_bytes_per_s: 0.0,
                write_bytes_per_s: 4100.0,
                util_pct: 0.1,
            }];
        }
    }
    let tv = report::views::telemetry_views(std::slice::from_ref(&run));
    let t = &tv[0].tables[0];
    let mb = t
        .head
        .iter()
        .position(|h| h == "vda read / write MB/s")
        .unwrap();
    assert!(
        t.rows.iter().all(|r| r[mb] == "0.00000 / 0.00410"),
        "{:?}",
        t.rows
    );
}

/// Each NIC rate is in a unit of its own: a management NIC's hundreds of bits per second
/// read `0.000000403` Gbit/s beside the loaded one's (acceptance P, 6), and one column
/// unit over rx and tx put a stream's 9.3 Gbit/s in the unit of its ACKs' few Mbit/s
/// (`9336.602 / 9.155` Mbit/s; `9336601.819` kbit/s where another row was slower).
#[test]
fn a_quiet_nics_rates_are_in_a_unit_of_their_own() {
    let mut run = kv_run(&Spec {
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    for r in &mut run.results {
        for t in &mut r.telemetry_summary {
            let nic = |name: &str, rx: f64, tx: f64| model::NicRate {
                name: name.into(),
                rx_bytes_per_s: rx,
                tx_bytes_per_s: tx,
                rx_packets_per_s: 1.0,
                tx_packets_per_s: 1.0,
                rx_drops_per_s: 0.0,
                tx_drops_per_s: 0.0,
            };
            t.nics = vec![
                nic("mgmt0", 50.0, 100.0),
                nic("eth0", 1_167_075_227.0, 1_144_360.0),
            ];
        }
    }
    let tv = report::views::telemetry_views(std::slice::from_ref(&run));
    let t = &tv[0].tables[0];
    for (nic, cell) in [
        ("mgmt0", "400 bit/s / 800 bit/s"),
        ("eth0", "9.34 Gbit/s / 9.15 Mbit/s"),
    ] {
        let c = t.head.iter().position(|h| *h == format!("{nic} rx / tx"));
        let c = c.unwrap_or_else(|| panic!("{:?}", t.head));
        assert!(t.rows.iter().all(|r| r[c] == cell), "{:?}", t.rows);
    }
}

/// Acceptance pass F, F9: the report showed no telemetry beyond per-CPU %: context
/// switches, interrupts, each NIC's Gbit/s and packets/s, each disk's MB/s and IOPS, and
/// kv/http's latency jitter are in a per-test table per run and host; idle devices are
/// left out and named; everything escaped.
#[test]
fn host_telemetry_table_per_run_and_host() {
    let mut run = kv_run(&Spec {
        label: "<script>x</script>&\"|",
        reps: 1,
        instances: &[1],
        ..Spec::default()
    });
    for r in &mut run.results {
        for t in &mut r.telemetry_summary {
            t.nics = vec![
                model::NicRate {
                    name: "eth<0>|".into(),
                    rx_bytes_per_s: 125e6,
                    tx_bytes_per_s: 250e6,
                    rx_packets_per_s: 100_000.0,
                    tx_packets_per_s: 200_000.0,
                    rx_drops_per_s: 0.0,
                    tx_drops_per_s: 0.0,
                },
                model::NicRate {
                    name: "ifb0".into(),
                    rx_bytes_per_s: 0.0,
                    tx_bytes_per_s: 0.0,
                    rx_packets_per_s: 0.0,
                    tx_packets_per_s: 0.0,
                    rx_drops_per_s: 0.0,
                    tx_drops_per_s: 0.0,
                },
            ];
            t.disks = vec![model::DiskRate {
                name: "vda".into(),
                reads_per_s: 10.0,
                writes_per_s: 20.0,
                read_bytes_per_s: 1e6,
                write_bytes_per_s: 4e6,
                util_pct: 1.0,
            }];
        }
        r.metrics
            .push(model::Metric::new("latency_jitter_ns", 71_600.0, "ns").label("kind", "service"));
    }
    let tv = report::views::telemetry_views(std::slice::from_ref(&run));
    // A view per host, and the test's latency jitter once, not in each host's table as if
    // each host had measured it (acceptance pass G, 13).
    assert_eq!(tv.len(), 2);
    let t = &tv[0].tables[0];
    assert_eq!(
        t.head,
        [
            "Test",
            "Context switches/s",
            "Interrupts/s",
            "eth<0>| rx / tx",
            "eth<0>| rx / tx packets/s",
            "vda read / write MB/s",
            "vda read / write IOPS",
        ]
    );
    let j = &tv[1].tables[0];
    assert_eq!(j.head, ["Test", "Latency jitter"]);
    assert!(
        j.rows
            .iter()
            .any(|r| r[0].contains("set") && r[0].ends_with("pipeline=1") && r[1] == "71.6 us"),
        "{:?}",
        j.rows
    );
    let set1 = t
        .rows
        .iter()
        .find(|r| r[0].contains("set") && r[0].ends_with("pipeline=1"))
        .unwrap_or_else(|| panic!("{:?}", t.rows));
    assert_eq!(
        set1[1..],
        [
            "12,000",
            "30,000",
            "1.00 Gbit/s / 2.00 Gbit/s",
            "100,000 / 200,000",
            "1.00 / 4.00",
            "10.0 / 20.0",
        ]
    );
    assert_eq!(
        tv[0].notes,
        ["Left out, idle in every test on local: ifb0."]
    );
    let m = report::markdown(std::slice::from_ref(&run), None);
    let sec = &m[m.find("## Host telemetry").expect("the section")..];
    assert!(
        sec.contains("### &lt;script&gt;x&lt;/script&gt;&amp;\"\\|: telemetry on local"),
        "{sec}"
    );
    assert!(sec.contains("| eth&lt;0&gt;\\| rx / tx |"), "{sec}");
    let h = report::html(std::slice::from_ref(&run), None);
    assert!(h.contains(r#"<h2 id="telemetry">Host telemetry</h2>"#));
    // Among the report's section links (review H, 18.10).
    assert!(
        h.contains(r##"<a href="#cpu">CPU</a><a href="#telemetry">Host telemetry</a>"##),
        "{h}"
    );
    assert!(h.contains("<th>eth&lt;0&gt;| rx / tx</th>"));
    assert!(!h.contains("<script>x") && !h.contains("eth<0>"));
}

/// Review H, 7: a capacity test's telemetry summary is over every step of its curve
/// together (a mean over rates from idle to saturation): the per-test telemetry table
/// leaves it out and its caption says so, rather than showing it as one test's row.
#[test]
fn host_telemetry_leaves_capacity_tests_out_and_says_so() {
    let mut run = one_rep_one_instance("<i>x</i>|");
    let mut ramp = run.results[0].clone();
    ramp.test = "ramp".into();
    ramp.metrics.push(
        model::Metric::new("demanded_rate_per_s", 100.0, "req/s")
            .label("phase", "ramp")
            .label("step", "0"),
    );
    for t in &mut ramp.telemetry_summary {
        t.ctxt_per_s = Some(987_654.0);
    }
    run.results.push(ramp);
    let tv = report::views::telemetry_views(std::slice::from_ref(&run));
    let t = &tv[0].tables[0];
    assert!(
        !t.rows.iter().any(|r| r[0].contains("ramp")),
        "{:?}",
        t.rows
    );
    assert!(!t.rows.iter().any(|r| r[1] == "987,654"), "{:?}", t.rows);
    assert!(
        t.caption
            .contains("; left out, as capacity tests: ramp (their figures are per step"),
        "{}",
        t.caption
    );
    let m = report::markdown(std::slice::from_ref(&run), None);
    assert!(!m.contains("987,654") && !m.contains("<i>x"), "{m}");
}

/// Acceptance pass G, 8: a failed result keeps what its surviving hosts measured up to
/// the failure; the telemetry table shows it, marked, and says it is in no headline figure.
#[test]
fn host_telemetry_shows_a_failed_test_marked() {
    let mut run = one_rep_one_instance("<i>x</i>|");
    run.results[0].status = model::Status::Failed;
    for t in &mut run.results[0].telemetry_summary {
        t.ctxt_per_s = Some(987_654.0);
    }
    let tv = report::views::telemetry_views(std::slice::from_ref(&run));
    let t = &tv[0].tables[0];
    let failed = t
        .rows
        .iter()
        .find(|r| r[1] == "987,654")
        .unwrap_or_else(|| panic!("{:?}", t.rows));
    assert!(failed[0].ends_with(" (failed)"), "{failed:?}");
    assert_eq!(
        t.rows.iter().filter(|r| r[0].ends_with("(failed)")).count(),
        1,
        "{:?}",
        t.rows
    );
    assert!(
        tv[0].notes[0].contains("is in no headline figure"),
        "{:?}",
        tv[0].notes
    );
    let m = report::markdown(std::slice::from_ref(&run), None);
    assert!(m.contains("987,654") && !m.contains("<i>x"));
}

/// A kv run of one repetition on one instance.
fn one_rep_one_instance(label: &'static str) -> model::RunRecord {
    kv_run(&Spec {
        label,
        reps: 1,
        instances: &[1],
        ..Spec::default()
    })
}

/// The per-CPU breakdown at a test's best point is the mean over the point's valid
/// repetitions, as the per-CPU table beside it, not the first repetition's (acceptance L,
/// 1: 95% %usr where the three averaged 72%); its title names the point it was taken at.
#[test]
fn per_cpu_breakdown_is_the_mean_of_the_repetitions() {
    let mut run = common::two_platforms().remove(0);
    for r in run.results.iter_mut() {
        for s in r.telemetry_summary.iter_mut() {
            for c in s.cpus.iter_mut().filter(|c| c.cpu == 1) {
                c.usr_pct = 10.0 * f64::from(r.repetition + 1);
            }
        }
    }
    let shown =
        report::charts::cpu_breakdowns(std::slice::from_ref(&run), &report::Selection::default())
            .shown;
    assert!(!shown.is_empty());
    for b in &shown {
        let cpu1 = b.cpus.iter().find(|c| c.cpu == 1).expect("CPU 1 shown");
        assert!(
            (cpu1.usr_pct - 20.0).abs() < 1e-9,
            "{}: {}",
            b.title(),
            cpu1.usr_pct
        );
        assert!(b.title().contains(" at instances="), "{}", b.title());
    }
}

/// Charts that leave curves out say how many they draw: the percentile chart kept the
/// first 10 curves by run (the last runs lost theirs), a sweep its first 12 lines, and
/// only the first 4 tests got a bucket chart, each with nothing to say so.
#[test]
fn charts_that_leave_curves_out_say_so() {
    let labels = ["r1", "r2", "r3", "r4"];
    let ids = [
        "20261120T230000-aaaaa1",
        "20261120T230000-aaaaa2",
        "20261120T230000-aaaaa3",
        "20261120T230000-aaaaa4",
    ];
    let mut runs: Vec<model::RunRecord> = labels
        .iter()
        .zip(ids)
        .enumerate()
        .map(|(i, (label, id))| {
            common::kv_run(&common::Spec {
                label,
                id,
                reps: 1,
                seed: i as u64 + 1,
                ..common::Spec::default()
            })
        })
        .collect();
    // Two tests more in the first run (pipeline 20): 6 tests with histograms.
    common::add_pipeline_copy(&mut runs[0], 20);
    let charts = report::charts::charts(&runs);
    let note = |section: &str, f: &dyn Fn(&str) -> bool| -> Vec<Option<String>> {
        charts
            .iter()
            .filter(|c| c.section == section && f(&c.file))
            .map(|c| c.note.clone())
            .collect()
    };
    // 4 runs x 4 tests, and the first run's 2 more: 18 best points with histograms.
    assert_eq!(
        note("latency", &|f| f == "kv_latency.svg"),
        [Some(
            "10 of 18 curves drawn; the rest are in the tables".into()
        )]
    );
    let buckets = note("latency", &|f| f.starts_with("kv_buckets"));
    assert_eq!(buckets.len(), 4, "{buckets:?}");
    assert_eq!(
        buckets.last().unwrap().as_deref(),
        Some("4 of 6 tests' bucket charts drawn; the rest are in the tables")
    );
    let sweep = note("sweep", &|f| f.ends_with("_vs_instances.svg"));
    assert!(
        sweep
            .iter()
            .flatten()
            .any(|n| n.contains("12 of 18 curves drawn; the rest are in the tables")),
        "{sweep:?}"
    );
}
