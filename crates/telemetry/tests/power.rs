//! The real power-reading code over sysfs trees built in temp dirs: RAPL with several
//! packages and subzones, counters that advance and wrap, unreadable files; hwmon
//! power and energy sensors; ipmitool and a meter through fake commands that print
//! ipmitool's output format; the declared power model.

use rackbench_telemetry as telemetry;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use telemetry::{detect_power, PowerConfig, PowerModel, PowerSources};

fn write(p: &Path, s: &str) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, s).unwrap();
}

fn empty_cfg(root: &Path) -> PowerConfig {
    PowerConfig {
        powercap_root: root.join("powercap"),
        hwmon_root: root.join("hwmon"),
        ipmitool: None,
        meter_command: None,
        model: None,
    }
}

/// Two packages, each with core and dram subzones, plus psys; laid out flat like
/// /sys/class/powercap (symlinks there, directories here).
fn rapl_tree(root: &Path, max: u64) {
    let pc = root.join("powercap");
    for (id, name, e) in [
        ("intel-rapl:0", "package-0", 1_000_000u64),
        ("intel-rapl:0:0", "core", 500_000),
        ("intel-rapl:0:1", "dram", 100_000),
        ("intel-rapl:1", "package-1", 2_000_000),
        ("intel-rapl:1:0", "dram", 200_000),
        ("intel-rapl:2", "psys", 3_000_000),
    ] {
        write(&pc.join(id).join("name"), &format!("{name}\n"));
        write(&pc.join(id).join("energy_uj"), &format!("{e}\n"));
        write(
            &pc.join(id).join("max_energy_range_uj"),
            &format!("{max}\n"),
        );
    }
    // The control-type directory itself is not a zone.
    write(&pc.join("intel-rapl/enabled"), "1\n");
}

fn set_energy(root: &Path, id: &str, e: u64) {
    write(
        &root.join("powercap").join(id).join("energy_uj"),
        &format!("{e}\n"),
    );
}

fn watts(r: &[model::PowerReading], source: &str, zone: &str) -> f64 {
    r.iter()
        .find(|p| p.source == source && p.zone == zone)
        .unwrap_or_else(|| panic!("no {source}/{zone} in {r:?}"))
        .watts
}

#[test]
fn rapl_packages_and_subzones_with_wraparound() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let max = 262_143_328_850u64; // a real Skylake-SP max_energy_range_uj
    rapl_tree(root, max);
    let cfg = empty_cfg(root);
    let (mut src, det) = PowerSources::open(&cfg);
    assert_eq!(
        det.sources,
        [
            "rapl:package-0",
            "rapl:core-0",
            "rapl:dram-0",
            "rapl:package-1",
            "rapl:dram-1",
            "rapl:psys"
        ]
    );
    let t0 = Instant::now();

    // +150 J on package-0 over ~2 s; package-1 wraps: from max-1_000_000 (set below
    // as the new baseline) to 49_000_000 is 50 J.
    set_energy(root, "intel-rapl:0", 1_000_000 + 150_000_000);
    set_energy(root, "intel-rapl:0:0", 500_000 + 100_000_000);
    set_energy(root, "intel-rapl:0:1", 100_000 + 20_000_000);
    set_energy(root, "intel-rapl:1", max - 1_000_000);
    set_energy(root, "intel-rapl:1:0", 200_000 + 10_000_000);
    set_energy(root, "intel-rapl:2", 3_000_000 + 400_000_000);
    let r = src.read(t0 + Duration::from_secs(2), None, true);
    let near = |a: f64, b: f64| (a - b).abs() / b < 0.01;
    assert!(near(watts(&r, "rapl", "package-0"), 75.0), "{r:?}");
    assert!(near(watts(&r, "rapl", "core-0"), 50.0));
    assert!(near(watts(&r, "rapl", "dram-0"), 10.0));
    assert!(near(watts(&r, "rapl", "dram-1"), 5.0));
    assert!(near(watts(&r, "rapl", "psys"), 200.0));
    assert!(r.iter().all(|p| !p.whole_system && !p.modelled));

    // The wrap: 1 J before the top of the range, then 49 J after zero.
    set_energy(root, "intel-rapl:1", 49_000_000);
    let r = src.read(t0 + Duration::from_secs(3), None, true);
    let w = watts(&r, "rapl", "package-1");
    assert!((w - 50.0).abs() < 0.01, "wrapped package-1 gave {w} W");
    assert!(src.errors().is_empty(), "{:?}", src.errors());
}

#[test]
fn rapl_backwards_without_range_drops_the_interval() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let pc = root.join("powercap/intel-rapl:0");
    write(&pc.join("name"), "package-0\n");
    write(&pc.join("energy_uj"), "5000000\n");
    let (mut src, det) = PowerSources::open(&empty_cfg(root));
    assert_eq!(det.sources, ["rapl:package-0"]);
    write(&pc.join("energy_uj"), "1000\n");
    let r = src.read(Instant::now() + Duration::from_secs(1), None, true);
    assert!(r.is_empty(), "{r:?}");
    assert!(src.errors()[0].contains("interval dropped"));
    // The next interval is measured again from the new baseline.
    write(&pc.join("energy_uj"), "2001000\n");
    let r = src.read(Instant::now() + Duration::from_secs(2), None, true);
    assert_eq!(r.len(), 1);
}

#[test]
fn rapl_unreadable_energy_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let pc = root.join("powercap");
    // A zone whose energy_uj cannot be read as a file at all (EISDIR): the generic path.
    write(&pc.join("intel-rapl:0/name"), "package-0\n");
    fs::create_dir_all(pc.join("intel-rapl:0/energy_uj")).unwrap();
    // A zone whose energy_uj is mode 000: root reads it anyway (CAP_DAC_OVERRIDE), as
    // root-only energy_uj is meant to be read; anyone else gets the CVE note.
    write(&pc.join("intel-rapl:1/name"), "package-1\n");
    write(&pc.join("intel-rapl:1/energy_uj"), "42\n");
    use std::os::unix::fs::PermissionsExt;
    let locked = pc.join("intel-rapl:1/energy_uj");
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    let det = detect_power(&empty_cfg(root));
    let n0 = det
        .notes
        .iter()
        .find(|n| n.contains("package-0"))
        .expect("note for package-0");
    assert!(n0.contains("could not be read"), "{n0}");
    if fs::read_to_string(&locked).is_ok() {
        eprintln!("running as root: mode 000 is still readable; the CVE-2020-8694 note is checked by a unit test");
        assert!(det.sources.contains(&"rapl:package-1".to_string()));
    } else {
        let n1 = det
            .notes
            .iter()
            .find(|n| n.contains("package-1"))
            .expect("note for package-1");
        assert!(n1.contains("CVE-2020-8694"), "{n1}");
    }
}

#[test]
fn nothing_present_says_why_for_each_kind() {
    let dir = tempfile::tempdir().unwrap();
    let det = detect_power(&empty_cfg(dir.path()));
    assert!(det.sources.is_empty());
    let all = det.notes.join("\n");
    for k in ["rapl:", "hwmon:", "ipmi-dcmi:", "meter:"] {
        assert!(all.contains(k), "no note for {k}: {all}");
    }
    assert!(det.missing_reason().starts_with("no power source found: "));
}

#[test]
fn hwmon_power_meter_and_energy_counter() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let hw = root.join("hwmon");
    // ACPI power meter: whole system, power1_average in µW.
    write(&hw.join("hwmon0/name"), "power_meter\n");
    write(&hw.join("hwmon0/power1_average"), "245000000\n");
    // A component sensor with a label, and an energy counter.
    write(&hw.join("hwmon1/name"), "amdgpu\n");
    write(&hw.join("hwmon1/power1_input"), "35500000\n");
    write(&hw.join("hwmon1/power1_label"), "PPT\n");
    write(&hw.join("hwmon2/name"), "zenergy\n");
    write(&hw.join("hwmon2/energy1_input"), "1000000\n");
    // Not power: ignored.
    write(&hw.join("hwmon3/name"), "coretemp\n");
    write(&hw.join("hwmon3/temp1_input"), "45000\n");
    let (mut src, det) = PowerSources::open(&empty_cfg(root));
    assert_eq!(
        det.sources,
        [
            "hwmon:power_meter/power1",
            "hwmon:amdgpu/PPT",
            "hwmon:zenergy/energy1"
        ]
    );
    // The ACPI meter alone measures the whole system: beside it a model is refused.
    assert_eq!(det.whole_system, ["hwmon:power_meter/power1"]);
    write(&hw.join("hwmon2/energy1_input"), "31000000\n");
    let r = src.read(Instant::now() + Duration::from_secs(2), None, true);
    let pm = r.iter().find(|p| p.zone == "power_meter/power1").unwrap();
    assert_eq!(pm.watts, 245.0);
    assert!(pm.whole_system);
    let gpu = r.iter().find(|p| p.zone == "amdgpu/PPT").unwrap();
    assert_eq!(gpu.watts, 35.5);
    assert!(!gpu.whole_system);
    let e = watts(&r, "hwmon", "zenergy/energy1");
    assert!((e - 15.0).abs() < 0.2, "{e}");
    assert!(src.last_failed().is_empty(), "{:?}", src.last_failed());
    // The counter reset: that interval is dropped, and said so (it went unsaid: a
    // power window missing a source's samples gave no reason).
    write(&hw.join("hwmon2/energy1_input"), "5000\n");
    let r = src.read(Instant::now() + Duration::from_secs(4), None, true);
    assert!(!r.iter().any(|p| p.zone == "zenergy/energy1"), "{r:?}");
    assert_eq!(
        src.last_failed(),
        [
            "hwmon zenergy/energy1: counter went back from 31000000 to 5000 µJ (a reset); \
          interval dropped"
        ]
    );
    // A whole-system meter reading 0 W reports nothing: a failed reading, not 0 W
    // measured; a component at 0 W (an idle rail) is a reading. One that reads 0 W from
    // the start is no source at all (a model may stand beside it).
    {
        let dir = tempfile::tempdir().unwrap();
        let hw = dir.path().join("hwmon");
        write(&hw.join("hwmon0/name"), "power_meter\n");
        write(&hw.join("hwmon0/power1_average"), "0\n");
        let (_, det) = PowerSources::open(&empty_cfg(dir.path()));
        assert!(
            det.sources.is_empty() && det.whole_system.is_empty(),
            "{det:?}"
        );
        assert!(
            det.notes
                .iter()
                .any(|n| n.contains("reads 0 W for the whole system")),
            "{:?}",
            det.notes
        );
    }
    write(&hw.join("hwmon0/power1_average"), "0\n");
    write(&hw.join("hwmon1/power1_input"), "0\n");
    let r = src.read(Instant::now() + Duration::from_secs(6), None, true);
    assert!(!r.iter().any(|p| p.zone == "power_meter/power1"), "{r:?}");
    assert_eq!(
        r.iter().find(|p| p.zone == "amdgpu/PPT").unwrap().watts,
        0.0
    );
    assert!(
        src.last_failed()
            .iter()
            .any(|f| f.starts_with("hwmon power_meter/power1: read 0 W for the whole system")),
        "{:?}",
        src.last_failed()
    );
}

fn fake_ipmitool(dir: &Path, fixture: &str) -> String {
    let out = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    let script = dir.join("fake-ipmitool");
    // Prints the captured output only when called as `ipmitool dcmi power reading`.
    write(
        &script,
        &format!(
            "#!/bin/sh\n[ \"$1 $2 $3\" = \"dcmi power reading\" ] || {{ echo \"bad args: $*\" >&2; exit 1; }}\ncat '{}'\n",
            out.display()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    // A test thread that forked while this one held the script open for writing keeps
    // that descriptor until its child execs: until then running the script fails with
    // ETXTBSY ("Text file busy"). Wait for that to pass (running it with no arguments
    // only prints "bad args").
    for _ in 0..200 {
        match std::process::Command::new(&script).output() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            _ => break,
        }
    }
    script.display().to_string()
}

#[test]
fn ipmi_dcmi_through_a_fake_ipmitool() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = empty_cfg(dir.path());
    cfg.ipmitool = Some(fake_ipmitool(dir.path(), "ipmitool_dcmi_power_reading.txt"));
    let (mut src, det) = PowerSources::open(&cfg);
    assert_eq!(det.sources, ["ipmi-dcmi:system"]);
    assert_eq!(det.whole_system, det.sources);
    // A tick comes an interval after the start (the question asked then has answered).
    std::thread::sleep(Duration::from_millis(300));
    let r = src.read(Instant::now(), None, true);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].source, "ipmi-dcmi");
    assert_eq!(r[0].watts, 312.0);
    assert!(r[0].whole_system && !r[0].modelled);
}

/// A BMC reading 0 W measures nothing, whatever state it says (activated or not): no
/// source, a note. One reading watts beside `deactivated` (OpenBMC's ipmid never set
/// the state) is the server's power, with a note; it was refused as "not live", which
/// left a server with RAPL its components' power alone as the headline.
#[test]
fn ipmi_at_zero_or_failing_is_a_note_and_deactivated_watts_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = empty_cfg(dir.path());
    for fixture in [
        "ipmitool_dcmi_power_reading_deactivated.txt",
        "ipmitool_dcmi_power_reading_activated_zero.txt",
    ] {
        cfg.ipmitool = Some(fake_ipmitool(dir.path(), fixture));
        let det = detect_power(&cfg);
        assert!(det.sources.is_empty(), "{fixture}: {det:?}");
        assert!(
            det.notes
                .iter()
                .any(|n| n.contains("the BMC reads 0 W") && n.contains("measures no power")),
            "{fixture}: {det:?}"
        );
    }

    cfg.ipmitool = Some(fake_ipmitool(
        dir.path(),
        "ipmitool_dcmi_power_reading_deactivated_live.txt",
    ));
    let (mut src, det) = PowerSources::open(&cfg);
    assert_eq!(det.sources, ["ipmi-dcmi:system"]);
    assert_eq!(det.whole_system, det.sources);
    assert!(
        det.notes
            .iter()
            .any(|n| n.contains("reads 319 W") && n.contains("taken as live")),
        "{det:?}"
    );
    std::thread::sleep(Duration::from_millis(300));
    let r = src.read(Instant::now(), None, true);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].watts, 319.0);
    assert!(r[0].whole_system);

    cfg.ipmitool = Some("sh -c 'echo Could not open device at /dev/ipmi0 >&2; exit 1' --".into());
    let det = detect_power(&cfg);
    assert!(
        det.notes
            .iter()
            .any(|n| n.contains("Could not open device")),
        "{det:?}"
    );
}

#[test]
fn meter_command_and_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = empty_cfg(dir.path());
    let counter = dir.path().join("n");
    write(&counter, "0\n");
    // A meter whose reading changes per call: 200 W, 201 W, ...
    cfg.meter_command = Some(format!(
        "n=$(cat '{c}'); echo $((n+1)) > '{c}'; echo \"$((200+n)) W\"",
        c = counter.display()
    ));
    cfg.model = Some(PowerModel {
        idle_w: 100.0,
        max_w: 400.0,
    });
    let (mut src, det) = PowerSources::open(&cfg);
    assert_eq!(det.sources, ["meter:system", "model:system"]);
    assert_eq!(det.whole_system, ["meter:system"]);
    // 200 W was the check at open; 201 W the question asked as the first interval began,
    // which a tick takes when its own (202 W) does not come in time. A tick comes an
    // interval after the start.
    std::thread::sleep(Duration::from_millis(300));
    let r = src.read(Instant::now(), Some(50.0), true);
    assert_eq!(watts(&r, "meter", "system"), 202.0);
    let m = r.iter().find(|p| p.source == "model").unwrap();
    assert_eq!(m.watts, 250.0);
    assert!(m.modelled && m.whole_system);
    // No busy figure: no modelled reading rather than a made-up one.
    let r = src.read(Instant::now(), None, true);
    assert!(r.iter().all(|p| p.source != "model"));
    assert_eq!(watts(&r, "meter", "system"), 203.0);
}

#[test]
fn meter_printing_garbage_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = empty_cfg(dir.path());
    cfg.meter_command = Some("echo hello".into());
    let det = detect_power(&cfg);
    assert!(det.sources.is_empty());
    assert!(det.notes.iter().any(|n| n.contains("printed no watts")));
}

/// A RAPL counter counts modulo its range: AMD's and Intel DRAM's 65.5 kJ wrap every
/// 234 s at 280 W, so two reads 300 s apart (`--telemetry-interval 300`) may be two wraps
/// apart and read 65.5 kJ low, silently. Such an interval is dropped with the reason.
#[test]
fn rapl_reads_further_apart_than_its_range_holds_drop_the_interval() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let max = 65_532_610_987u64; // an AMD Zen max_energy_range_uj
    let pc = root.join("powercap/intel-rapl:0");
    write(&pc.join("name"), "package-0\n");
    write(&pc.join("max_energy_range_uj"), &format!("{max}\n"));
    write(&pc.join("energy_uj"), "1000000\n");
    let (mut src, _) = PowerSources::open(&empty_cfg(root));
    let t0 = Instant::now();
    // 60 s at 100 W: within what the range holds at 1000 W (65 s).
    write(&pc.join("energy_uj"), "6001000000\n");
    let r = src.read(t0 + Duration::from_secs(60), None, true);
    assert!(
        (watts(&r, "rapl", "package-0") - 100.0).abs() < 1.0,
        "{r:?}"
    );
    // 300 s later the counter reads 30 kJ more: 100 W, or 318 W with a second wrap.
    write(&pc.join("energy_uj"), "36001000000\n");
    let r = src.read(t0 + Duration::from_secs(360), None, true);
    assert!(r.is_empty(), "{r:?}");
    let e = &src.last_failed()[0];
    assert!(
        e.contains("may have wrapped more than once") && e.contains("interval dropped"),
        "{e}"
    );
}

/// Two GPUs of one driver each have an `amdgpu/PPT` sensor: one zone name for both, and
/// the summary, keyed by zone, averaged the two as one sensor. A name two devices share
/// is told apart by the device; one no other shares keeps its short name.
#[test]
fn hwmon_sensors_of_one_name_on_two_devices_are_two_zones() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let hw = root.join("hwmon");
    for (dev, uw) in [("hwmon1", "35000000"), ("hwmon2", "120000000")] {
        write(&hw.join(dev).join("name"), "amdgpu\n");
        write(&hw.join(dev).join("power1_input"), &format!("{uw}\n"));
        write(&hw.join(dev).join("power1_label"), "PPT\n");
    }
    write(&hw.join("hwmon3/name"), "zenergy\n");
    write(&hw.join("hwmon3/energy1_input"), "1000000\n");
    // The second card's device link names its PCI address: that, not `hwmon2`, whose
    // number can change at the next boot.
    std::os::unix::fs::symlink("../../../0000:03:00.0", hw.join("hwmon2").join("device")).unwrap();
    let (mut src, det) = PowerSources::open(&empty_cfg(root));
    assert_eq!(
        det.sources,
        [
            "hwmon:amdgpu@hwmon1/PPT",
            "hwmon:amdgpu@0000:03:00.0/PPT",
            "hwmon:zenergy/energy1"
        ]
    );
    let r = src.read(Instant::now() + Duration::from_secs(1), None, true);
    assert_eq!(watts(&r, "hwmon", "amdgpu@hwmon1/PPT"), 35.0);
    assert_eq!(watts(&r, "hwmon", "amdgpu@0000:03:00.0/PPT"), 120.0);
}
