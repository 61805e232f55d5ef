//! The sampler end to end: over a fixture /proc tree whose counters the test advances
//! (exact percentages, warm-up trimming, process CPU, the power model), and over this
//! machine's real /proc and /sys with a thread burning CPU.

use rackbench_telemetry as telemetry;

use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use telemetry::{
    measure_idle, summarize, summarize_with_notes, PowerConfig, PowerModel, Sampler, SamplerConfig,
};

fn write(p: &Path, s: &str) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, s).unwrap();
}

/// A fake host: /proc/stat with two CPUs, net/dev, diskstats, one process; /sys/block.
struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    fn new() -> Fake {
        let f = Fake {
            dir: tempfile::tempdir().unwrap(),
        };
        f.set(0);
        write(&f.sys().join("block/sda/size"), "100\n");
        f
    }
    fn proc_(&self) -> std::path::PathBuf {
        self.dir.path().join("proc")
    }
    fn sys(&self) -> std::path::PathBuf {
        self.dir.path().join("sys")
    }
    /// Counters after `k` steps: each step, cpu0 does 60 usr + 20 sys + 20 idle ticks,
    /// cpu1 100 idle; 1000 context switches; eth0 receives 1 MB; sda reads 100 ops of
    /// 8 sectors and is busy 250 ms; process 4242 uses 30 user + 10 system ticks.
    fn set(&self, k: u64) {
        let (u0, s0, i0, i1) = (1000 + 60 * k, 500 + 20 * k, 9000 + 20 * k, 9000 + 100 * k);
        write(
            &self.proc_().join("stat"),
            &format!(
                "cpu  {} 0 {} {} 0 0 0 0 0 0\ncpu0 {u0} 0 {s0} {i0} 0 0 0 0 0 0\n\
                 cpu1 1000 0 500 {i1} 0 0 0 0 0 0\nintr {} 0 0\nctxt {}\nbtime 1\n",
                u0 + 1000,
                s0 + 500,
                i0 + i1,
                50_000 + 500 * k,
                100_000 + 1000 * k
            ),
        );
        write(
            &self.proc_().join("net/dev"),
            &format!(
                "Inter-|   Receive                                                |  Transmit\n \
                 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
                 lo:    3193      29    0    0    0     0          0         0     3193      29    0    0    0     0       0          0\n  \
                 eth0: {} {} 0 0 0 0 0 0 5000 10 0 0 0 0 0 0\n",
                1_000_000 * k,
                1000 * k
            ),
        );
        write(
            &self.proc_().join("diskstats"),
            &format!(
                "   8       0 sda {} 0 {} 0 5 0 40 0 0 {} 0 0 0 0 0 0 0\n   \
                 8       1 sda1 {} 0 {} 0 5 0 40 0 0 {} 0 0 0 0 0 0 0\n   \
                 7       0 loop0 {} 0 {} 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
                1 + 100 * k,
                8 + 800 * k,
                250 * k,
                1 + 100 * k,
                8 + 800 * k,
                250 * k,
                5 * k,
                5 * k
            ),
        );
        write(
            &self.proc_().join("4242/stat"),
            &format!(
                "4242 (redis-server) S 1 4242 4242 0 -1 4194560 100 0 0 0 {} {} 0 0 20 0 3 0 1 1 1 1",
                100 + 30 * k,
                50 + 10 * k
            ),
        );
    }
    fn cfg(&self) -> SamplerConfig {
        SamplerConfig {
            host: "fake".into(),
            // Long enough that only the test's take()/set_warmup() close intervals.
            interval: Duration::from_secs(3600),
            proc_root: self.proc_(),
            sys_root: self.sys(),
            power: PowerConfig {
                powercap_root: self.sys().join("class/powercap"),
                hwmon_root: self.sys().join("class/hwmon"),
                ipmitool: None,
                meter_command: None,
                model: None,
            },
        }
    }
}

fn pause() {
    std::thread::sleep(Duration::from_millis(60));
}

#[test]
fn fixture_counters_give_exact_percentages_and_rates() {
    let fake = Fake::new();
    let mut cfg = fake.cfg();
    cfg.power.model = Some(PowerModel {
        idle_w: 100.0,
        max_w: 300.0,
    });
    let s = Sampler::start(cfg).unwrap();
    s.watch_process("server:0", 4242);
    pause();
    fake.set(1);
    let samples = s.take();
    assert_eq!(samples.len(), 1);
    let x = &samples[0];
    assert_eq!(x.host, "fake");
    assert!(!x.warmup);
    assert!(x.interval_s > 0.05 && x.interval_s < 5.0);
    let dt = x.interval_s;

    let cpu0 = x.cpus.iter().find(|c| c.cpu == 0).unwrap();
    assert!((cpu0.usr_pct - 60.0).abs() < 1e-9, "{cpu0:?}");
    assert!((cpu0.sys_pct - 20.0).abs() < 1e-9);
    assert!((cpu0.idle_pct - 20.0).abs() < 1e-9);
    let all = x.cpus.iter().find(|c| c.cpu == -1).unwrap();
    assert!((all.usr_pct - 30.0).abs() < 1e-9, "{all:?}");
    assert!((all.busy_pct() - 40.0).abs() < 1e-9);
    assert_eq!(x.cpus[0].cpu, -1, "all-CPU line first");

    assert!((x.ctxt_per_s.unwrap() - 1000.0 / dt).abs() < 1e-6);
    assert!((x.intr_per_s.unwrap() - 500.0 / dt).abs() < 1e-6);

    let names: Vec<&str> = x.nics.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["lo", "eth0"]);
    let eth0 = &x.nics[1];
    assert!((eth0.rx_bytes_per_s - 1e6 / dt).abs() < 1e-3);

    // Whole disks only: sda, not its partition, not the loop device.
    let disks: Vec<&str> = x.disks.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(disks, ["sda"]);
    let sda = &x.disks[0];
    assert!((sda.read_bytes_per_s - 800.0 * 512.0 / dt).abs() < 1e-3);
    assert!((sda.util_pct - (250.0 / (dt * 1000.0) * 100.0).min(100.0)).abs() < 1e-6);

    // 30 user ticks at USER_HZ 100 = 0.3 s of CPU over the process's own interval.
    let p = &x.procs[0];
    assert_eq!((p.role.as_str(), p.pid), ("server:0", 4242));
    assert!(p.usr_pct > 0.0 && (p.usr_pct / p.sys_pct - 3.0).abs() < 1e-9);

    // The model follows the measured all-CPU busy %.
    let m = x.power.iter().find(|r| r.source == "model").unwrap();
    assert!((m.watts - 180.0).abs() < 1e-9);
    assert!(m.modelled);

    // No frequency source in the fixture: none reported, rather than zeros.
    assert!(x.freq_mhz.is_empty());
    s.stop();
}

/// A process watched a moment before a sample closes is not in it: its few ticks over
/// that moment read as thousands of percent. Its next sample spans the time since.
#[test]
fn a_process_watched_just_before_a_close_waits_for_the_next_sample() {
    let fake = Fake::new();
    let s = Sampler::start(fake.cfg()).unwrap();
    pause();
    s.watch_process("server:0", 4242);
    fake.set(1);
    let x = &s.take()[0];
    assert!(x.procs.is_empty(), "{:?}", x.procs);
    pause();
    fake.set(2);
    let y = &s.take()[0];
    let p = &y.procs[0];
    // 60 user ticks (two steps) at USER_HZ 100, 0.6 s of CPU, over the 60 ms or more
    // since the watch: at most 1000%.
    assert!(p.usr_pct > 0.0 && p.usr_pct <= 1000.0, "{p:?}");
    s.stop();
}

/// A CPU whose clock cannot be read leaves the others' in the sample, and says so: its
/// gap (or one offline CPU in the numbering) dropped every CPU's clock without a word.
#[test]
fn a_cpu_without_a_clock_leaves_the_others_and_a_note() {
    let fake = Fake::new();
    write(
        &fake
            .sys()
            .join("devices/system/cpu/cpu0/cpufreq/scaling_cur_freq"),
        "2400000\n",
    );
    let s = Sampler::start(fake.cfg()).unwrap();
    pause();
    fake.set(1);
    let x = &s.take()[0];
    assert_eq!(x.freq_mhz, [2400.0]);
    let notes = s.notes();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("CPU 1") && n.contains("over the other CPUs")),
        "{notes:?}"
    );
    s.stop();
}

#[test]
fn warmup_is_its_own_interval_and_left_out_of_summaries() {
    let fake = Fake::new();
    let s = Sampler::start(fake.cfg()).unwrap();
    s.set_warmup(true); // closes nothing yet: too soon after start
    pause();
    fake.set(1);
    s.set_warmup(false); // closes the warm-up interval
    pause();
    // Measured interval: cpu0 fully busy.
    let stat = fs::read_to_string(fake.proc_().join("stat")).unwrap();
    let bumped = stat.replacen("cpu0 1060 0 520 9020", "cpu0 1160 0 520 9020", 1);
    write(&fake.proc_().join("stat"), &bumped);
    let samples = s.take();
    // On a loaded machine start -> set_warmup can take over 20 ms and close a first,
    // counter-less interval; the shape that matters is: warm-up, then measured.
    let samples: Vec<_> = samples.into_iter().skip_while(|x| !x.warmup).collect();
    assert_eq!(samples.len(), 2, "{samples:#?}");
    assert!(samples[0].warmup && !samples[1].warmup);
    let sum = summarize(&samples);
    assert_eq!(sum.len(), 1);
    assert_eq!(sum[0].samples, 1);
    let cpu0 = sum[0].cpus.iter().find(|c| c.cpu == 0).unwrap();
    assert!((cpu0.usr_pct - 100.0).abs() < 1e-9, "{cpu0:?}");
    // No power source at all: the summary says why, no zero watts.
    assert!(sum[0].power.is_empty());
    assert!(sum[0].power_missing.is_some());
    let det = s.power_detection();
    let sum = summarize_with_notes(&samples, &det.notes);
    assert!(sum[0].power_missing.as_ref().unwrap().contains("rapl"));
    // The next take starts after the previous one.
    assert!(s.take().is_empty());
    assert!(s.stop().is_empty());
}

#[test]
fn exited_process_is_dropped_with_a_note() {
    let fake = Fake::new();
    let s = Sampler::start(fake.cfg()).unwrap();
    s.watch_process("loadgen", 4242);
    s.watch_process("ghost", 999_999);
    pause();
    fs::remove_dir_all(fake.proc_().join("4242")).unwrap();
    let samples = s.take();
    assert!(samples[0].procs.is_empty());
    let notes = s.notes().join("\n");
    assert!(notes.contains("999999"), "{notes}");
    assert!(notes.contains("4242 (loadgen) exited"), "{notes}");
}

/// `/proc/PID/stat` of a fixture process with parent `ppid`: user and system ticks, and
/// those of the children it has waited for.
fn pid_stat(pid: u32, ppid: u32, (ut, st): (u64, u64), (cut, cst): (u64, u64)) -> String {
    format!("{pid} (postgres) S {ppid} {pid} {pid} 0 -1 4194560 100 0 0 0 {ut} {st} {cut} {cst} 20 0 1 0 {pid} 1 1 1")
}

/// The acceptance tester's oltp run stored PostgreSQL's CPU as 0 at 2,000 transactions/s:
/// only the postmaster was read, and its backends do the work.
#[test]
fn a_watched_server_counts_its_forked_backends() {
    let fake = Fake::new();
    let at = |pid: u32| fake.proc_().join(format!("{pid}/stat"));
    write(&at(4300), &pid_stat(4300, 1, (10, 10), (0, 0)));
    write(&at(4301), &pid_stat(4301, 4300, (500, 100), (0, 0)));
    write(&at(4302), &pid_stat(4302, 4300, (20, 20), (0, 0)));
    let s = Sampler::start(fake.cfg()).unwrap();
    s.watch_process("postgres", 4300);
    s.watch_process_alone("loadgen", 4242);
    let watched_for = Duration::from_millis(250);
    std::thread::sleep(watched_for);
    // Backend 4301 works on (+60 +20); 4302 exits, reaped with 30 + 25 ticks in all;
    // 4303 is forked (+5 +5); the postmaster itself does nothing.
    write(&at(4300), &pid_stat(4300, 1, (10, 10), (30, 25)));
    write(&at(4301), &pid_stat(4301, 4300, (560, 120), (0, 0)));
    fs::remove_dir_all(fake.proc_().join("4302")).unwrap();
    write(&at(4303), &pid_stat(4303, 4300, (5, 5), (0, 0)));
    fake.set(1);
    let samples = s.take();
    let x = samples.last().unwrap();
    let pg = x.procs.iter().find(|p| p.role == "postgres").unwrap();
    assert!(pg.with_descendants);
    // usr: 60 + (30 - 20) + 5 ticks; sys: 20 + (25 - 20) + 5 ticks, at USER_HZ 100. A
    // process's % is over its own interval, from its watch to the sample: at least the
    // sleep, at most the sample's interval (a loaded machine can stall the test between
    // the sampler's start and the watch), so the CPU time is bracketed by the two and the
    // user/system split, over one interval, is exact.
    let cpu_s = |pct: f64| {
        (
            pct / 100.0 * watched_for.as_secs_f64(),
            pct / 100.0 * x.interval_s,
        )
    };
    let brackets = |pct: f64, want: f64| {
        let (lo, hi) = cpu_s(pct);
        lo <= want + 0.01 && hi >= want - 0.01
    };
    assert!(brackets(pg.usr_pct, 0.75), "{pg:?} over {} s", x.interval_s);
    assert!(brackets(pg.sys_pct, 0.30), "{pg:?} over {} s", x.interval_s);
    assert!((pg.usr_pct / pg.sys_pct - 2.5).abs() < 1e-6, "{pg:?}");
    // The load generator counts alone, as before.
    let lg = x.procs.iter().find(|p| p.role == "loadgen").unwrap();
    assert!(!lg.with_descendants);
    assert!(brackets(lg.usr_pct, 0.30), "{lg:?} over {} s", x.interval_s);
    assert!((lg.usr_pct / lg.sys_pct - 3.0).abs() < 1e-6, "{lg:?}");
    let sum = summarize(&samples);
    let pg = sum[0].procs.iter().find(|p| p.role == "postgres").unwrap();
    assert!(pg.with_descendants && pg.usr_pct > 0.0);
}

/// The live host: a server-like parent whose forked child burns CPU and exits: what the
/// child used reaches the watched process's figure (which its own time alone, ~0, would
/// miss), as much as the parent's own account of its children says.
#[test]
fn live_host_counts_the_cpu_of_exited_children() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let mut cfg = SamplerConfig::local();
    cfg.interval = Duration::from_millis(100);
    cfg.power.ipmitool = None;
    let s = Sampler::start(cfg).unwrap();
    // A fixed amount of work (not a wall-clock bound: on a busy machine that gets a
    // sliver of a CPU), then the shell's own account of its children's CPU (`times`).
    let mut child = Command::new("sh")
        .args([
            "-c",
            "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; times; echo done; read x",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    s.watch_process("server:0", child.id());
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut said = String::new();
    while !said.ends_with("done\n") {
        assert!(out.read_line(&mut said).unwrap() > 0, "{said}");
    }
    let samples = s.take();
    writeln!(child.stdin.take().unwrap()).unwrap();
    child.wait().unwrap();
    let used_s = watched_cpu_s(&samples);
    // `times`' second line: the children's user and system time, "0m0.312000s 0m0.002000s".
    let secs = |w: &str| -> f64 {
        let (m, s) = w.trim_end_matches('s').split_once('m').unwrap();
        m.parse::<f64>().unwrap() * 60.0 + s.parse::<f64>().unwrap()
    };
    let children: f64 = said
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .map(secs)
        .sum();
    assert!(children > 0.02, "the loop used {children} s: {said}");
    // Tick resolution (10 ms per process, a few of them) and the shell's own ~0.
    assert!(
        (used_s - children).abs() < 0.03 + 0.1 * children,
        "sampled {used_s} s, the shell counted {children} s of its children: {samples:#?}"
    );
}

#[test]
fn summary_is_interval_weighted() {
    let mk = |t: f64, dt: f64, usr: f64, w: f64| model::TelemetrySample {
        host: "h".into(),
        t_s: t,
        interval_s: dt,
        warmup: false,
        cpus: vec![model::CpuUtil {
            usr_pct: usr,
            idle_pct: 100.0 - usr,
            ..model::CpuUtil::idle(-1)
        }],
        ctxt_per_s: Some(0.0),
        intr_per_s: Some(0.0),
        nics: vec![],
        disks: vec![],
        freq_mhz: vec![2000.0, 3000.0],
        procs: vec![],
        power: vec![model::PowerReading {
            source: "rapl".into(),
            zone: "package-0".into(),
            watts: w,
            whole_system: false,
            modelled: false,
            instantaneous: false,
            late_s: None,
        }],
        power_failed: Vec::new(),
    };
    // 3 s at 10 % and 1 s at 90 %: weighted mean 30 %, not 50 %.
    let s = summarize(&[mk(3.0, 3.0, 10.0, 100.0), mk(4.0, 1.0, 90.0, 200.0)]);
    assert!((s[0].cpus[0].usr_pct - 30.0).abs() < 1e-9);
    assert!((s[0].power[0].mean_watts - 125.0).abs() < 1e-9);
    assert_eq!(s[0].power[0].max_watts, 200.0);
    assert_eq!(s[0].mean_freq_mhz, Some(2500.0));
    assert_eq!(s[0].power_missing, None);
}

/// A whole-system power reading of `source`.
fn whole(source: &str, watts: f64, instantaneous: bool) -> model::PowerReading {
    model::PowerReading {
        source: source.into(),
        zone: "system".into(),
        watts,
        whole_system: true,
        modelled: false,
        instantaneous,
        late_s: None,
    }
}

/// A 1 s sample of host `h` ending at `t_s` with only `power` in it.
fn power_sample(t_s: f64, power: Vec<model::PowerReading>) -> model::TelemetrySample {
    model::TelemetrySample {
        host: "h".into(),
        t_s,
        interval_s: 1.0,
        warmup: false,
        cpus: vec![],
        ctxt_per_s: Some(0.0),
        intr_per_s: Some(0.0),
        nics: vec![],
        disks: vec![],
        freq_mhz: vec![],
        procs: vec![],
        power,
        power_failed: Vec::new(),
    }
}

#[test]
fn a_window_after_the_mark_keeps_the_samples_wholly_inside_it() {
    // Four 1 s samples since a mark 10 s into the run: 200 W idle (the start's lead and
    // warm-up), 400 W twice (the measured load), 200 W (the drain and after). The step
    // measured from 0.5 s to 3.0 s after the mark: the two samples wholly inside it say
    // 400 W; the first, half inside, mixes the lead with the load and is left out (by
    // the parts inside, 360 W; over the whole, 300 W).
    let mk = |t_s: f64, watts: f64| power_sample(t_s, vec![whole("meter", watts, true)]);
    let since = [
        mk(11.0, 200.0),
        mk(12.0, 400.0),
        mk(13.0, 400.0),
        mk(14.0, 200.0),
    ];
    let watts = |s: &[model::TelemetrySample]| summarize(s)[0].power[0].mean_watts;
    assert!((watts(&since) - 300.0).abs() < 1e-9);
    let w = telemetry::within(&since, 0.5, 3.0);
    assert_eq!(
        w.iter().map(|s| s.t_s).collect::<Vec<_>>(),
        vec![12.0, 13.0]
    );
    assert!((watts(&w) - 400.0).abs() < 1e-9, "{}", watts(&w));
    // On the samples' edges, to within the slack: the same two.
    assert_eq!(telemetry::within(&since, 1.015, 2.99).len(), 2);
    // Shorter than a sample: the parts inside, each weighed by its part; the meter's
    // reading at 1.0 s is the one taken inside (the next, at 2.0 s, is after it).
    let w = telemetry::within(&since, 0.5, 1.5);
    assert_eq!(
        w.iter().map(|s| s.interval_s).collect::<Vec<_>>(),
        vec![0.5, 0.5]
    );
    assert!((watts(&w) - 200.0).abs() < 1e-9, "{}", watts(&w));
    assert!(telemetry::within(&since, 5.0, 6.0).is_empty());
    assert!(telemetry::within(&[], 0.0, 1.0).is_empty());
    // Spans that overlap count once; a gap between two spans leaves its sample out.
    let w = telemetry::within_spans(&since, &[(1.0, 2.0), (1.5, 2.0), (3.0, 4.0)]).samples;
    assert_eq!(
        w.iter().map(|s| s.t_s).collect::<Vec<_>>(),
        vec![12.0, 14.0]
    );
}

/// The acceptance tester's `run kv --duration 1`: the get test ran 1.000 s, the 1 s
/// sample before its end reached 35 ms before its start (beyond the 20 ms slack), and
/// the test's close cut a 25 ms sample wholly inside it. That sample stood alone for the
/// test (1 sample, covered 0.025 s, idle 0, flagged coarse); the 1 s sample, 96.5% inside,
/// is the test's CPU, with its part inside.
#[test]
fn a_tiny_closing_sample_does_not_stand_alone_for_a_one_second_test() {
    let mk = |t: f64, dt: f64, busy: f64| model::TelemetrySample {
        host: "h".into(),
        t_s: t,
        interval_s: dt,
        cpus: vec![model::CpuUtil {
            usr_pct: busy,
            idle_pct: 100.0 - busy,
            ..model::CpuUtil::idle(-1)
        }],
        ..Default::default()
    };
    // Samples: [0, 1.0] idle-ish, [1.0, 2.0] the load, [2.0, 2.025] the close.
    let samples = [
        mk(1.0, 1.0, 2.0),
        mk(2.0, 1.0, 60.0),
        mk(2.025, 0.025, 100.0),
    ];
    let span = (1.035, 2.035);
    let cut = telemetry::within_spans(&samples, &[span]);
    assert!(!cut.whole);
    let parts: Vec<(f64, f64)> = cut.samples.iter().map(|s| (s.t_s, s.interval_s)).collect();
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert!((parts[0].0 - 2.0).abs() < 1e-9 && (parts[0].1 - 0.965).abs() < 1e-9);
    assert!((parts[1].0 - 2.025).abs() < 1e-9 && (parts[1].1 - 0.025).abs() < 1e-9);
    let sum = summarize(&cut.samples);
    assert_eq!(sum[0].samples, 2);
    assert!((sum[0].covered_s.unwrap() - 0.99).abs() < 1e-9);
    let busy = sum[0].cpus[0].busy_pct();
    assert!(
        (busy - (0.965 * 60.0 + 0.025 * 100.0) / 0.99).abs() < 1e-9,
        "{busy}"
    );
    // The same test with the 1 s sample inside to the slack: the whole samples, as before.
    let cut = telemetry::within_spans(&samples, &[(1.015, 2.025)]);
    assert!(cut.whole);
    let kept: Vec<(f64, f64)> = cut.samples.iter().map(|s| (s.t_s, s.interval_s)).collect();
    assert_eq!(kept, [(2.0, 1.0), (2.025, 0.025)]);
}

#[test]
fn measure_idle_uses_every_source_and_refuses_without_one() {
    let fake = Fake::new();
    let mut cfg = fake.cfg();
    cfg.interval = Duration::from_millis(50);
    let e = measure_idle(&cfg, Duration::from_millis(120)).unwrap_err();
    assert!(format!("{e:#}").contains("no power source"), "{e:#}");

    cfg.power.meter_command = Some("echo 150.5".into());
    let idle = measure_idle(&cfg, Duration::from_millis(150)).unwrap();
    assert_eq!(idle.host, "fake");
    assert!(idle.duration_s > 0.1);
    let m = idle.power.iter().find(|p| p.source == "meter").unwrap();
    assert!((m.mean_watts - 150.5).abs() < 1e-9);
    assert!(m.whole_system);
}

/// An idle figure from part of its window carried no warning, and W above idle rested
/// on it (review H, 3): a meter that fails every other call.
#[test]
fn idle_power_from_part_of_its_window_says_so() {
    let fake = Fake::new();
    let mut cfg = fake.cfg();
    cfg.interval = Duration::from_millis(100);
    let dir = tempfile::tempdir().unwrap();
    let meter = counting_script(dir.path(), "$((n % 2)) -eq 0", "exit 1", "echo 90");
    cfg.power.meter_command = Some(meter);
    let s = Sampler::start(cfg).unwrap();
    let idle = s.measure_idle(Duration::from_millis(800)).unwrap();
    drop(s);
    let m = idle.power.iter().find(|p| p.source == "meter").unwrap();
    assert_eq!(m.mean_watts.round(), 90.0);
    let flag = idle
        .flags
        .iter()
        .find(|f| f.code == "power_gaps")
        .unwrap_or_else(|| panic!("{idle:?}"));
    assert!(
        flag.message
            .contains("samples of its idle power have no reading"),
        "{flag:?}"
    );
}

#[test]
fn bad_roots_fail_with_the_path() {
    let mut cfg = SamplerConfig::local();
    cfg.proc_root = "/nonexistent-proc".into();
    let e = Sampler::start(cfg).err().unwrap();
    assert!(format!("{e:#}").contains("/nonexistent-proc/stat"), "{e:#}");
    let mut cfg = SamplerConfig::local();
    cfg.interval = Duration::from_millis(1);
    assert!(Sampler::start(cfg).is_err());
}

#[test]
fn sampler_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Sampler>();
}

fn self_cpu_s() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The live host: a thread burns CPU for ~0.5 s while the sampler watches this process
/// every 100 ms. The CPU the sampler attributes to the process must match what the
/// kernel's getrusage says it used (the machine is shared, so the absolute % varies).
#[test]
fn live_host_sees_a_busy_thread() {
    let mut cfg = SamplerConfig::local();
    cfg.interval = Duration::from_millis(100);
    cfg.power.ipmitool = None;
    let s = Arc::new(Sampler::start(cfg).unwrap());
    let cpu0 = self_cpu_s();
    // Alone: other tests of this binary start child processes meanwhile.
    s.watch_process_alone("test", std::process::id());
    let stop = Arc::new(AtomicBool::new(false));
    let st = Arc::clone(&stop);
    let burner = std::thread::spawn(move || {
        let mut x = 0u64;
        while !st.load(Ordering::Relaxed) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            std::hint::black_box(x);
        }
    });
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_millis(550));
    stop.store(true, Ordering::Relaxed);
    burner.join().unwrap();
    let samples = s.take();
    let used_s = self_cpu_s() - cpu0;
    let elapsed = t0.elapsed().as_secs_f64();
    assert!(
        samples.len() >= 4,
        "{} samples in {elapsed:.2} s",
        samples.len()
    );
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    for x in &samples {
        assert_eq!(x.cpus.iter().filter(|c| c.cpu >= 0).count(), ncpu);
        assert!(x.nics.iter().any(|n| n.name == "lo"));
        assert!(x.cpus.iter().all(|c| (0.0..=100.0).contains(&c.idle_pct)));
    }
    let attributed_s = watched_cpu_s(&samples);
    // /proc counts in 10 ms ticks: allow a tick per interval plus 15 %.
    let tol = 0.01 * (samples.len() + 2) as f64 + 0.15 * used_s;
    assert!(
        (attributed_s - used_s).abs() <= tol,
        "sampler says {attributed_s:.3} s of CPU, getrusage {used_s:.3} s"
    );
    assert!(used_s > 0.02, "the burner never ran ({used_s} s)");
}

#[test]
fn unreadable_stat_mid_run_keeps_the_old_baseline() {
    let fake = Fake::new();
    let s = Sampler::start(fake.cfg()).unwrap();
    pause();
    let stat = fake.proc_().join("stat");
    fs::remove_file(&stat).unwrap();
    assert!(s.take().is_empty());
    assert!(
        s.notes().iter().any(|n| n.contains("stat")),
        "{:?}",
        s.notes()
    );
    pause();
    fake.set(1);
    let samples = s.take();
    assert_eq!(samples.len(), 1);
    // The interval runs from the last good snapshot (start), not from the failed read.
    assert!(samples[0].interval_s >= 0.12, "{}", samples[0].interval_s);
    let cpu0 = samples[0].cpus.iter().find(|c| c.cpu == 0).unwrap();
    assert!((cpu0.usr_pct - 60.0).abs() < 1e-9);
}

/// A meter that gives the watts of the moment (here an ACPI power meter's power1_input)
/// is read at the sampler's own ticks, inside the load; the interval a test's end closes
/// (after the load stopped) carries no reading of it, so the idle moment after the load
/// does not count as the load's last interval. Energy counters are still read there.
#[test]
fn instantaneous_power_is_read_at_ticks_not_at_a_tests_end() {
    let fake = Fake::new();
    let hw = fake.sys().join("class/hwmon/hwmon0");
    write(&hw.join("name"), "power_meter\n");
    write(&hw.join("power1_input"), "300000000\n");
    let rapl = fake.sys().join("class/powercap/intel-rapl:0");
    write(&rapl.join("name"), "package-0\n");
    write(&rapl.join("energy_uj"), "1000000\n");
    write(&rapl.join("max_energy_range_uj"), "262143328850\n");
    let meter = |x: &model::TelemetrySample| x.power.iter().any(|p| p.source == "hwmon");
    let rapl_read = |x: &model::TelemetrySample| x.power.iter().any(|p| p.source == "rapl");
    // The take lands halfway between two ticks (100 ms apart, 450 ms in). A take within
    // MIN_INTERVAL of a tick closes nothing (the tick was the close), which a loaded
    // machine can cause by delaying either thread: then the run is tried again.
    let mut closed = None;
    for _ in 0..5 {
        let mut cfg = fake.cfg();
        cfg.interval = Duration::from_millis(100);
        let s = Sampler::start(cfg).unwrap();
        std::thread::sleep(Duration::from_millis(450));
        let taken = s.take();
        let (last, ticks) = taken.split_last().unwrap();
        assert!(ticks.iter().all(meter), "every tick reads the meter");
        if !meter(last) {
            assert!(
                ticks.len() >= 2,
                "{} ticks in 450 ms at 100 ms",
                ticks.len()
            );
            closed = Some(taken);
            break;
        }
    }
    let taken = closed.expect(
        "in five runs the last sample read the meter: a take's close reads it (the fault \
         this test is for), or each take landed within MIN_INTERVAL of a tick",
    );
    let last = taken.last().unwrap();
    assert!(rapl_read(last), "energy counters are read at every close");
    assert!(last
        .power
        .iter()
        .all(|p| !p.instantaneous && p.source == "rapl"));
    let sum = summarize(&taken);
    let pm = sum[0].power.iter().find(|p| p.source == "hwmon").unwrap();
    assert!((pm.mean_watts - 300.0).abs() < 1e-9, "{}", pm.mean_watts);
}

/// A window keeps an instantaneous reading only when its sample ended inside it; an
/// energy counter's mean is kept, weighted by the part inside, as every other figure.
#[test]
fn a_window_keeps_instantaneous_power_read_inside_it() {
    let mk = |t_s: f64, meter_w: f64| {
        power_sample(
            t_s,
            vec![whole("meter", meter_w, true), whole("rapl", 100.0, false)],
        )
    };
    // The load runs from 0.5 to 1.5 s after the first sample began (no sample wholly
    // inside: the parts count); the meter read 400 W at 1 s, and 150 W at 2 s, after it.
    let since = [mk(1.0, 400.0), mk(2.0, 150.0), mk(3.0, 150.0)];
    let w = telemetry::within(&since, 0.5, 1.5);
    assert_eq!(w.len(), 2);
    assert!(w[1].power.iter().all(|p| p.source == "rapl"));
    let s = summarize(&w);
    let mean = |src: &str| {
        s[0].power
            .iter()
            .find(|p| p.source == src)
            .unwrap()
            .mean_watts
    };
    assert!((mean("meter") - 400.0).abs() < 1e-9);
    assert!((mean("rapl") - 100.0).abs() < 1e-9);
}

/// An executable `m.sh` in `dir` running `body`.
/// A command that runs a shell script of `body`: given to `sh`, not executed itself. A
/// file this process wrote is busy for exec (ETXTBSY) while a child forked meanwhile by
/// another test's thread still holds its write descriptor, and the source that could not
/// start was then dropped at detection: every sample without power (a CI failure).
fn script(dir: &Path, body: impl AsRef<[u8]>) -> String {
    let path = dir.join("m.sh");
    fs::write(&path, body).unwrap();
    format!("sh {}", path.display())
}

/// An executable that counts its calls (`$n`, from 1) and runs `then` on the calls where
/// `[ when ]` holds, `otherwise` on the others.
fn counting_script(dir: &Path, when: &str, then: &str, otherwise: &str) -> String {
    script(
        dir,
        format!(
            "#!/bin/sh\nd=$(dirname \"$0\"); n=$(cat \"$d/n\" 2>/dev/null || echo 0); \
             n=$((n+1)); echo $n > \"$d/n\"\nif [ {when} ]; then {then}; fi\n{otherwise}\n"
        ),
    )
}

/// CPU seconds of every watched process over `samples`.
fn watched_cpu_s(samples: &[model::TelemetrySample]) -> f64 {
    samples
        .iter()
        .flat_map(|x| {
            x.procs
                .iter()
                .map(move |p| p.total_pct() / 100.0 * x.interval_s)
        })
        .sum()
}

/// A meter that hangs (from its second call on) holds up its own readings only: the
/// sampler keeps closing an interval each tick, each tick's missing reading is a
/// `power_failed` gap, and the summary's `power_gaps` says how many and why (acceptance
/// pass F, 3: the hang stalled every sample on the host for the command's 5 s).
#[test]
fn a_hanging_meter_leaves_gaps_and_holds_up_no_sample() {
    hanging_power_command_leaves_gaps("echo 90", |cfg, cmd| cfg.power.meter_command = Some(cmd));
}

/// ipmitool waiting on a BMC that stopped answering, as the meter (it ran on the
/// sampling thread, and held up every sample for its 5 s).
#[test]
fn a_hanging_ipmitool_leaves_gaps_and_holds_up_no_sample() {
    hanging_power_command_leaves_gaps(
        "echo '    Instantaneous power reading:                   180 Watts'",
        |cfg, cmd| cfg.power.ipmitool = Some(cmd),
    );
}

/// A meter slower than a tick's wait (a PDU over SNMP at 0.3 s against 250 ms) read in
/// no tick at all: each tick dropped the answer the one before had asked for (review H,
/// 1). The answer that comes by the next tick is that interval's reading.
#[test]
fn a_meter_slower_than_a_ticks_wait_reads_every_tick_but_the_first() {
    // A machine saturated by other work can hold the meter's `sh` past a whole interval:
    // a run that meets it is run again, up to three. Dropping the answer the tick before
    // asked for reads in no tick, in every run.
    let mut last = String::new();
    for _ in 0..3 {
        let fake = Fake::new();
        let mut cfg = fake.cfg();
        // A tick waits a quarter of 400 ms, 100 ms at least; the meter takes 200.
        cfg.interval = Duration::from_millis(400);
        let dir = tempfile::tempdir().unwrap();
        let meter = script(dir.path(), "#!/bin/sh\nsleep 0.2\necho 90\n");
        cfg.power.meter_command = Some(meter);
        let s = Sampler::start(cfg).unwrap();
        std::thread::sleep(Duration::from_millis(2100));
        let samples = s.stop();
        let read = samples
            .iter()
            .filter(|x| {
                x.power
                    .iter()
                    .any(|p| p.source == "meter" && p.watts == 90.0)
            })
            .count();
        assert!(samples.len() >= 4, "{samples:?}");
        if read + 1 >= samples.len() - 1 {
            return;
        }
        last = format!("{read} of {}: {samples:?}", samples.len());
    }
    panic!("in each of 3 runs; the last: {last}");
}

/// A command slower than the interval itself (ipmitool over the network at 1.2 s against
/// 1 s) read in no tick: each dropped the answer an earlier one had asked for (review I,
/// 2). It now reads every other tick.
#[test]
fn a_meter_slower_than_the_interval_reads_every_other_tick() {
    let fake = Fake::new();
    let mut cfg = fake.cfg();
    cfg.interval = Duration::from_millis(300);
    let dir = tempfile::tempdir().unwrap();
    let meter = script(dir.path(), "#!/bin/sh\nsleep 0.4\necho 90\n");
    cfg.power.meter_command = Some(meter);
    let s = Sampler::start(cfg).unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    let samples = s.stop();
    let read = samples
        .iter()
        .filter(|x| x.power.iter().any(|p| p.source == "meter"))
        .count();
    assert!(read >= 3, "{read} of {} samples read", samples.len());
}

/// power_gaps counts the samples a reading was due in: a sample a test's start or end
/// closed between ticks reads no instantaneous source, and is no gap (review H, 16).
#[test]
fn power_gaps_count_only_the_ticks_a_reading_was_due_in() {
    let fake = Fake::new();
    let mut cfg = fake.cfg();
    cfg.interval = Duration::from_millis(300);
    let dir = tempfile::tempdir().unwrap();
    let meter = counting_script(dir.path(), "$n -ge 2", "exit 1", "echo 90");
    cfg.power.meter_command = Some(meter);
    let s = Sampler::start(cfg).unwrap();
    let mut samples = Vec::new();
    // Ticks every 300 ms, and a test's start or end between them.
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(450));
        samples.extend(s.take());
    }
    samples.extend(s.stop());
    let sum = &summarize(&samples)[0];
    let gaps = sum
        .power_gaps
        .as_ref()
        .unwrap_or_else(|| panic!("{samples:#?}"));
    let ticks = samples
        .iter()
        .filter(|x| !x.power_failed.is_empty())
        .count();
    assert_eq!(gaps.failed_samples as usize, ticks);
    assert!(
        gaps.samples < sum.samples,
        "{gaps:?} of {} samples",
        sum.samples
    );
}

/// A host of energy counters alone (RAPL) reads them at every close: one interval of
/// three that failed leaves two seconds of three covered (it said 0.0 s: only the samples
/// of an instantaneous source counted as due).
#[test]
fn power_gaps_of_energy_counters_cover_the_intervals_they_read() {
    let rapl = |t_s: f64| power_sample(t_s, vec![whole("rapl", 100.0, false)]);
    let mut failed = power_sample(2.0, vec![]);
    failed.power_failed = vec!["rapl package-0: the counter went back".into()];
    let sum = &summarize(&[rapl(1.0), failed, rapl(3.0)])[0];
    let gaps = sum.power_gaps.as_ref().unwrap();
    assert_eq!((gaps.failed_samples, gaps.samples), (1, 3), "{gaps:?}");
    assert!((gaps.covered_s - 2.0).abs() < 1e-9, "{gaps:?}");
}

/// A caller closing intervals more often than the sampler ticks (a test's checkpoint
/// every 5 s against `--telemetry-interval 10s`) puts off no tick: the meter, read at
/// ticks only, is still read (it was never read while the closes came).
#[test]
fn closes_between_ticks_put_off_no_tick() {
    let fake = Fake::new();
    let mut cfg = fake.cfg();
    cfg.interval = Duration::from_millis(400);
    let dir = tempfile::tempdir().unwrap();
    cfg.power.meter_command = Some(script(dir.path(), "#!/bin/sh\necho 90\n"));
    let s = Sampler::start(cfg).unwrap();
    let mark = s.mark();
    for _ in 0..16 {
        std::thread::sleep(Duration::from_millis(150));
        s.since(mark);
    }
    let samples = s.stop();
    let read = samples
        .iter()
        .filter(|x| x.power.iter().any(|p| p.source == "meter"))
        .count();
    assert!(
        read >= 2,
        "{read} of {} samples read the meter",
        samples.len()
    );
}

/// A power command that answers `first` once, then hangs, given to the sampler by `set`.
fn hanging_power_command_leaves_gaps(first: &str, set: impl Fn(&mut SamplerConfig, String)) {
    let fake = Fake::new();
    let mut cfg = fake.cfg();
    cfg.interval = Duration::from_millis(100);
    let dir = tempfile::tempdir().unwrap();
    let cmd = counting_script(dir.path(), "$n -ge 2", "exec sleep 2", first);
    set(&mut cfg, cmd);
    let s = Sampler::start(cfg).unwrap();
    let found = s.power_detection();
    assert!(found.sources.len() == 1, "{found:?}");
    // Ten ticks' time: the hung command, started at the first, answers none of them.
    std::thread::sleep(Duration::from_millis(1000));
    let samples = s.stop();
    assert!(samples.len() >= 5, "{} samples in 1 s", samples.len());
    let failed: Vec<_> = samples
        .iter()
        .filter(|x| !x.power_failed.is_empty())
        .collect();
    assert!(failed.len() >= 4, "{samples:?}");
    let sum = &summarize(&samples)[0];
    let gaps = sum.power_gaps.as_ref().unwrap();
    assert_eq!(gaps.failed_samples as usize, failed.len());
    assert!(gaps.covered_s < sum.covered_s.unwrap());
    assert!(
        gaps.last_error.contains("still running") || gaps.last_error.contains("did not answer"),
        "{}",
        gaps.last_error
    );
}

/// A meter slower than a tick's wait answers each tick the question the tick before
/// asked: the first tick after a test's start took a reading of the setup before it (a
/// 4 s test at 300 W after 150 W of setup read 262.5 W, and no flag said so). An answer
/// asked before the window began is a gap; the others say how late they are.
#[test]
fn a_late_meter_answer_asked_before_the_window_is_not_the_windows() {
    let fake = Fake::new();
    let mut cfg = fake.cfg();
    // A tick waits a quarter of 400 ms, 100 ms at least; the meter takes 200 ms, and
    // reads the level as it is asked.
    cfg.interval = Duration::from_millis(400);
    let dir = tempfile::tempdir().unwrap();
    let level = dir.path().join("level");
    fs::write(&level, "150\n").unwrap();
    let meter = script(
        dir.path(),
        format!(
            "#!/bin/sh\nw=$(cat {})\nsleep 0.2\necho $w\n",
            level.display()
        ),
    );
    cfg.power.meter_command = Some(meter);
    let s = Sampler::start(cfg).unwrap();
    std::thread::sleep(Duration::from_millis(1300));
    fs::write(&level, "300\n").unwrap();
    s.take();
    std::thread::sleep(Duration::from_millis(2100));
    let samples = s.take();
    drop(s);
    let sum = &summarize(&samples)[0];
    let m = sum
        .power
        .iter()
        .find(|p| p.source == "meter")
        .unwrap_or_else(|| panic!("{samples:#?}"));
    assert_eq!(m.mean_watts, 300.0, "{samples:#?}");
    let gaps = sum.power_gaps.as_ref().unwrap();
    assert!(
        gaps.last_error.contains("asked before this window began"),
        "{gaps:?}"
    );
    let late = samples
        .iter()
        .flat_map(|x| &x.power)
        .filter_map(|p| p.late_s)
        .collect::<Vec<_>>();
    assert!(
        !late.is_empty() && late.iter().all(|l| *l > 0.1),
        "{late:?}"
    );
}

/// A checkpoint's copy of the samples so far ([`Sampler::since`], every 5 s of a test)
/// is no window's beginning: the late answer of the tick after it was dropped as "asked
/// before this window began", a fifth of a slow meter's readings at 1 s ticks, all of
/// them at 5 s.
#[test]
fn a_checkpoint_mid_window_drops_no_late_reading() {
    let fake = Fake::new();
    let mut cfg = fake.cfg();
    cfg.interval = Duration::from_millis(400);
    let dir = tempfile::tempdir().unwrap();
    let meter = script(dir.path(), "#!/bin/sh\nsleep 0.2\necho 300\n");
    cfg.power.meter_command = Some(meter);
    let s = Sampler::start(cfg).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let mark = s.mark();
    s.take();
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(700));
        s.since(mark);
    }
    std::thread::sleep(Duration::from_millis(500));
    let samples = s.take();
    drop(s);
    let before: Vec<&String> = samples
        .iter()
        .flat_map(|x| &x.power_failed)
        .filter(|e| e.contains("asked before this window began"))
        .collect();
    // The first tick's answer was asked before the take, rightly a gap; none after.
    assert!(before.len() <= 1, "{before:#?}");
    assert!(
        samples
            .iter()
            .flat_map(|x| &x.power)
            .any(|p| p.late_s.is_some()),
        "{samples:#?}"
    );
}

/// A reading that answers late stands for the moment it was asked: a whole sample inside
/// a span whose reading was asked before the span began does not carry it in, and the
/// span's power has a gap there instead.
#[test]
fn a_span_keeps_no_late_reading_asked_before_it() {
    let late = |watts: f64, late_s: f64| model::PowerReading {
        late_s: Some(late_s),
        ..whole("meter", watts, true)
    };
    let samples = [
        power_sample(1.0, vec![whole("meter", 150.0, true)]),
        power_sample(2.0, vec![late(150.0, 1.2)]),
        power_sample(3.0, vec![late(300.0, 0.9)]),
        power_sample(4.0, vec![late(300.0, 0.9)]),
    ];
    let cut = telemetry::within_spans(&samples, &[(1.0, 4.0)]);
    assert_eq!(cut.samples.len(), 3, "{cut:#?}");
    assert!(cut.samples[0].power.is_empty(), "{cut:#?}");
    assert!(cut.samples[0].power_failed[0].contains("before the measured time began"));
    let sum = &summarize(&cut.samples)[0];
    assert_eq!(sum.power[0].mean_watts, 300.0);
    assert_eq!(sum.power_gaps.as_ref().unwrap().failed_samples, 1);
}

/// A /proc/stat without a `ctxt` line (a container's, a kernel's own) gave 0 context
/// switches a second in every sample and summary: not counted now reads missing, and a
/// note says why.
#[test]
fn context_switches_not_counted_are_missing_not_zero() {
    let fake = Fake::new();
    let strip = || {
        let p = fake.proc_().join("stat");
        let s = fs::read_to_string(&p).unwrap();
        let kept: String = s
            .lines()
            .filter(|l| !l.starts_with("ctxt"))
            .map(|l| format!("{l}\n"))
            .collect();
        fs::write(&p, kept).unwrap();
    };
    strip();
    let s = Sampler::start(fake.cfg()).unwrap();
    pause();
    fake.set(1);
    strip();
    let samples = s.take();
    let notes = s.notes();
    drop(s);
    assert_eq!(samples[0].ctxt_per_s, None, "{samples:?}");
    assert!(samples[0].intr_per_s.is_some_and(|v| v > 0.0));
    let sum = &summarize(&samples)[0];
    assert_eq!(sum.ctxt_per_s, None);
    assert!(sum.intr_per_s.is_some());
    assert!(
        notes.iter().any(|n| n.contains("no `ctxt` line")),
        "{notes:?}"
    );
}

/// A CPU online for half the window and a process there for half of it, both at one full
/// core: the CPUs summed read 150% of one CPU, not 200%, and the processes summed 150%,
/// not 200%. CPU 1's own line stays its mean while it was online (mpstat's average line),
/// and the summary says which were not there throughout.
#[test]
fn a_cpu_or_process_there_for_part_of_the_window_counts_for_that_part() {
    let busy = |cpu: i32| model::CpuUtil {
        usr_pct: 100.0,
        idle_pct: 0.0,
        ..model::CpuUtil::idle(cpu)
    };
    let proc = |role: &str, pid: u32| model::ProcCpu {
        role: role.into(),
        pid,
        usr_pct: 100.0,
        sys_pct: 0.0,
        with_descendants: false,
    };
    let mk =
        |t: f64, cpus: Vec<model::CpuUtil>, procs: Vec<model::ProcCpu>| model::TelemetrySample {
            host: "h".into(),
            t_s: t,
            interval_s: 1.0,
            cpus,
            procs,
            ..Default::default()
        };
    let samples: Vec<model::TelemetrySample> = (1..=4)
        .map(|t| {
            let both = t <= 2;
            let cpus = if both {
                vec![busy(-1), busy(0), busy(1)]
            } else {
                vec![busy(-1), busy(0)]
            };
            let procs = if both {
                vec![proc("loadgen", 1), proc("server:0", 2)]
            } else {
                vec![proc("loadgen", 1)]
            };
            mk(t as f64, cpus, procs)
        })
        .collect();
    let sum = &summarize(&samples)[0];
    let cpu1 = sum.cpus.iter().find(|c| c.cpu == 1).unwrap();
    assert!((cpu1.busy_pct() - 100.0).abs() < 1e-9, "{cpu1:?}");
    let cpus = sum.cpus_sum(|_| true, model::CpuUtil::busy_pct).unwrap();
    assert!((cpus - 150.0).abs() < 1e-9, "{cpus}");
    let procs: f64 = sum.procs.iter().map(model::ProcCpu::total_pct).sum();
    assert!((procs - 150.0).abs() < 1e-9, "{procs}");
    let partly: Vec<(Option<i32>, Option<&str>, f64)> = sum
        .part_present
        .iter()
        .map(|p| (p.cpu, p.role.as_deref(), p.present_s))
        .collect();
    assert_eq!(
        partly,
        vec![(Some(1), None, 2.0), (None, Some("server:0"), 2.0)]
    );
}
