//! The report in a real browser: Debian's headless Chromium opens the HTML file, the
//! dumped DOM must hold the rendered charts, the log must hold no console errors, and a
//! screenshot is saved (its path printed) for a person to look at.
//! Skips, saying why, when `chromium` is not installed (CI installs it).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rackbench_report as report;

fn chromium() -> Option<PathBuf> {
    for c in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::var("PATH").unwrap_or_default().split(':') {
            let p = Path::new(dir).join(c);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Run chromium with a deadline; returns (status ok, stdout, stderr).
fn run_chromium(bin: &Path, profile: &Path, extra: &[&str], url: &str) -> (bool, String, String) {
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(extra)
    .arg(url)
    .stdin(Stdio::null());
    // Output goes to files, not pipes: a dumped DOM and chromium's chatty log easily fill a
    // 64 KiB pipe, and a child blocked on a full pipe never exits.
    let out_path = profile.join("stdout.txt");
    let err_path = profile.join("stderr.txt");
    cmd.stdout(std::fs::File::create(&out_path).expect("stdout file"));
    cmd.stderr(std::fs::File::create(&err_path).expect("stderr file"));
    let mut child = cmd.spawn().expect("start chromium");
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            _ => {
                let _ = child.kill();
                break;
            }
        }
    }
    let status = child.wait().expect("chromium exit status");
    let read =
        |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    (status.success(), read(&out_path), read(&err_path))
}

/// The page written to `CARGO_TARGET_TMPDIR/NAME/report.html`, kept after the test
/// beside the build (not in /tmp) for a person to look at: (dir, file, file:// URL).
fn kept_page(name: &str, html: &str) -> (PathBuf, PathBuf, String) {
    let out_dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&out_dir);
    std::fs::create_dir_all(&out_dir).unwrap();
    let page = out_dir.join("report.html");
    std::fs::write(&page, html).unwrap();
    let url = format!("file://{}", page.display());
    (out_dir, page, url)
}

#[test]
fn report_renders_in_headless_chromium() {
    let Some(bin) = chromium() else {
        eprintln!("SKIP report_renders_in_headless_chromium: no chromium on PATH (apt-get install chromium)");
        return;
    };
    let runs = common::two_platforms();
    let plan =
        tco::Plan::from_toml(include_str!("../../tco/examples/seed_redis_tco.toml")).unwrap();
    let t = tco::evaluate(&plan, &Default::default()).unwrap();
    let html = report::html(&runs, Some(&t));
    let (out_dir, page, url) = kept_page("report-browser-test", &html);
    let profile = tempfile::tempdir().unwrap();

    // 1. The DOM after load, with console messages on stderr.
    let (ok, dom, log) = run_chromium(
        &bin,
        profile.path(),
        &[
            "--dump-dom",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=2000",
        ],
        &url,
    );
    assert!(ok, "chromium --dump-dom failed:\n{log}");
    let svgs = dom.matches("<svg").count();
    assert!(
        svgs >= 8,
        "expected the charts in the rendered DOM, found {svgs} svg elements"
    );
    assert!(
        dom.contains("<rect class=\"bar\""),
        "bar charts have no bars"
    );
    assert!(
        dom.contains("<polyline class=\"series\""),
        "line charts have no lines"
    );
    assert!(dom.contains("Difference"), "TCO table missing");
    let errors: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught") || l.contains("Refused to"))
        .collect();
    assert!(
        errors.is_empty(),
        "the page logged errors:\n{}",
        errors.join("\n")
    );

    // 2. A screenshot.
    let png = out_dir.join("report.png");
    let (ok, _, log) = run_chromium(
        &bin,
        profile.path(),
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1400,3000",
        ],
        &url,
    );
    assert!(ok, "chromium --screenshot failed:\n{log}");
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert!(bytes.starts_with(b"\x89PNG"), "not a PNG");
    assert!(
        bytes.len() > 50_000,
        "screenshot suspiciously small ({} bytes)",
        bytes.len()
    );
    println!("report: {}\nscreenshot: {}", page.display(), png.display());
}

/// Seed 000's table shape in a real browser: platforms in columns, the extrapolated
/// "x2 boards" column after the measured ones, then the Difference columns against the
/// chosen baseline, and the geometric-mean row, in that order in the rendered DOM.
#[test]
fn seed_000_table_shape_renders_in_headless_chromium() {
    let Some(bin) = chromium() else {
        eprintln!("SKIP seed_000_table_shape_renders_in_headless_chromium: no chromium on PATH (apt-get install chromium)");
        return;
    };
    let runs = common::two_platforms();
    let sel = report::Selection {
        at: vec![("instances".into(), "4".into())],
        baseline: Some("x86-a".into()),
        extrapolate: vec![report::selection::parse_extrapolation("arm-b=x2:boards", 1.0).unwrap()],
        ..Default::default()
    };
    sel.check(&runs).unwrap();
    let html = report::html_with(&runs, None, &sel);
    let (_, _, url) = kept_page("report-seed-table", &html);
    let profile = tempfile::tempdir().unwrap();
    let (ok, dom, log) = run_chromium(
        &bin,
        profile.path(),
        &["--dump-dom", "--virtual-time-budget=2000"],
        &url,
    );
    assert!(ok, "chromium --dump-dom failed:\n{log}");
    let table = dom
        .find("Summary of measured data (at instances=4)")
        .map(|i| &dom[i..])
        .expect("the summary, at the chosen sweep point");
    let table = &table[..table.find("</table>").unwrap()];
    let order = [
        "x86-a",
        "arm-b",
        "arm-b x2 boards (extrapolated)",
        "Difference<br>arm-b vs x86-a",
        "Difference<br>arm-b x2 boards (extrapolated) vs x86-a",
        "Geometric mean",
    ];
    let mut at = 0;
    for want in order {
        let i = table[at..]
            .find(want)
            .unwrap_or_else(|| panic!("{want:?} missing or out of order in:\n{table}"));
        at += i + want.len();
    }
    // The Difference of the extrapolated column is twice the measured one's.
    let diffs: Vec<f64> = table
        .match_indices("x (")
        .filter_map(|(i, _)| {
            let start = table[..i].rfind('>')? + 1;
            table[start..i].parse().ok()
        })
        .collect();
    assert!(diffs.len() >= 4, "{diffs:?}");
    assert!((diffs[1] / diffs[0] - 2.0).abs() < 0.02, "{diffs:?}");
}
