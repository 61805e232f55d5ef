//! Pure parsers for the kernel's text interfaces and the tools' outputs the sampler and
//! the disclosure read: each is a function of `&str`, so it is tested on captured real
//! text and can be fuzzed, and none of them touches the file system.
//!
//! They are lenient the way the kernel's formats require: a line that does not parse is
//! skipped rather than failing the whole file (older kernels have fewer columns, new
//! kernels add some), and missing trailing columns read as 0 where the kernel documents
//! them as later additions (guest, guest_nice, discard and flush fields).

use std::collections::BTreeMap;

/// One `cpu`/`cpuN` line of `/proc/stat`, in USER_HZ ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
    /// Already included in `user` (kernel `proc.rst`).
    pub guest: u64,
    /// Already included in `nice`.
    pub guest_nice: u64,
}

/// What the sampler needs from `/proc/stat`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// The all-CPU `cpu` line.
    pub all: Option<CpuTimes>,
    /// `cpuN` lines, in file order (offline CPUs are absent).
    pub cpus: Vec<(u32, CpuTimes)>,
    /// Context switches since boot.
    pub ctxt: Option<u64>,
    /// Interrupts since boot (first number of the `intr` line: the total).
    pub intr: Option<u64>,
}

/// Parse `/proc/stat`.
pub fn parse_proc_stat(text: &str) -> ProcStat {
    let mut out = ProcStat::default();
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        let Some(key) = it.next() else { continue };
        if let Some(rest) = key.strip_prefix("cpu") {
            let v: Vec<u64> = it.map_while(|f| f.parse().ok()).collect();
            // user nice system idle are present on every kernel since 2.4; the rest
            // were added later and read as 0 when absent.
            if v.len() < 4 {
                continue;
            }
            let at = |i: usize| v.get(i).copied().unwrap_or(0);
            let t = CpuTimes {
                user: at(0),
                nice: at(1),
                system: at(2),
                idle: at(3),
                iowait: at(4),
                irq: at(5),
                softirq: at(6),
                steal: at(7),
                guest: at(8),
                guest_nice: at(9),
            };
            if rest.is_empty() {
                out.all = Some(t);
            } else if let Ok(n) = rest.parse::<u32>() {
                out.cpus.push((n, t));
            }
        } else if key == "ctxt" {
            out.ctxt = it.next().and_then(|v| v.parse().ok());
        } else if key == "intr" {
            out.intr = it.next().and_then(|v| v.parse().ok());
        }
    }
    out
}

/// One interface of `/proc/net/dev` (the counters rackbench reports).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetDevCounters {
    pub name: String,
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub rx_errs: u64,
    pub rx_drop: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errs: u64,
    pub tx_drop: u64,
}

/// Parse `/proc/net/dev`: two header lines, then `name: 8 rx counters 8 tx counters`.
pub fn parse_net_dev(text: &str) -> Vec<NetDevCounters> {
    let mut out = Vec::new();
    for line in text.lines() {
        // Header lines contain '|'; interface lines contain ':' after the name. Old
        // kernels glue the first number to the colon (`eth0:123`), hence split, not fields.
        if line.contains('|') {
            continue;
        }
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let v: Vec<u64> = rest
            .split_ascii_whitespace()
            .map_while(|f| f.parse().ok())
            .collect();
        if v.len() < 16 {
            continue;
        }
        out.push(NetDevCounters {
            name: name.trim().to_string(),
            rx_bytes: v[0],
            rx_packets: v[1],
            rx_errs: v[2],
            rx_drop: v[3],
            tx_bytes: v[8],
            tx_packets: v[9],
            tx_errs: v[10],
            tx_drop: v[11],
        });
    }
    out
}

/// One line of `/proc/diskstats` (kernel `iostats.rst` field numbers in comments).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiskCounters {
    pub major: u32,
    pub minor: u32,
    pub name: String,
    /// 1: reads completed.
    pub reads: u64,
    /// 3: sectors read (512 bytes each, whatever the device's sector size).
    pub read_sectors: u64,
    /// 4: ms spent reading.
    pub read_ms: u64,
    /// 5: writes completed.
    pub writes: u64,
    /// 7: sectors written.
    pub write_sectors: u64,
    /// 8: ms spent writing.
    pub write_ms: u64,
    /// 9: I/Os in flight now.
    pub in_flight: u64,
    /// 10: ms with at least one I/O in flight (iostat's %util numerator).
    pub io_ms: u64,
    /// 12: discards completed (0 before 4.18).
    pub discards: u64,
}

/// Parse `/proc/diskstats`.
pub fn parse_diskstats(text: &str) -> Vec<DiskCounters> {
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        // major minor name + 11 fields is the oldest format still in use.
        if f.len() < 14 {
            continue;
        }
        let (Ok(major), Ok(minor)) = (f[0].parse::<u32>(), f[1].parse::<u32>()) else {
            continue;
        };
        let n: Vec<u64> = f[3..].iter().map_while(|x| x.parse().ok()).collect();
        if n.len() < 11 {
            continue;
        }
        out.push(DiskCounters {
            major,
            minor,
            name: f[2].to_string(),
            reads: n[0],
            read_sectors: n[2],
            read_ms: n[3],
            writes: n[4],
            write_sectors: n[6],
            write_ms: n[7],
            in_flight: n[8],
            io_ms: n[9],
            discards: n.get(11).copied().unwrap_or(0),
        });
    }
    out
}

/// CPU time of one process from `/proc/PID/stat`, in USER_HZ ticks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PidStat {
    pub pid: u32,
    /// Command name (between the parentheses; may contain spaces and parentheses).
    pub comm: String,
    pub state: char,
    /// Field 4: the parent's PID (its thread group's).
    pub ppid: u32,
    /// Field 14.
    pub utime: u64,
    /// Field 15.
    pub stime: u64,
    /// Field 16: user time of the children this process has waited for, theirs and
    /// their own waited-for children's.
    pub cutime: u64,
    /// Field 17: the same in system time.
    pub cstime: u64,
    /// Field 22: when the process started, in ticks after boot; with the PID it names one
    /// process, as a PID alone is reused.
    pub starttime: u64,
}

/// Parse `/proc/PID/stat`. The command name can contain anything, so the fields are
/// counted from the last `)`, as `proc(5)` advises.
pub fn parse_pid_stat(text: &str) -> Option<PidStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    if close < open {
        return None;
    }
    let pid = text[..open].trim().parse().ok()?;
    let comm = text[open + 1..close].to_string();
    let rest: Vec<&str> = text[close + 1..].split_ascii_whitespace().collect();
    // rest[0] is field 3 (state), so field N is rest[N - 3].
    let state = rest.first()?.chars().next()?;
    let field = |n: usize| rest.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some(PidStat {
        pid,
        comm,
        state,
        ppid: u32::try_from(field(4)?).ok()?,
        utime: field(14)?,
        stime: field(15)?,
        // Present since Linux 2.6; a truncated line from elsewhere reads 0.
        cutime: field(16).unwrap_or(0),
        cstime: field(17).unwrap_or(0),
        starttime: field(22).unwrap_or(0),
    })
}

/// One block of `/proc/cpuinfo` (one processor, or a trailing global block on Arm).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuInfoBlock {
    pub fields: Vec<(String, String)>,
}

impl CpuInfoBlock {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Parse `/proc/cpuinfo` into blocks separated by blank lines; `key\t: value` pairs.
pub fn parse_cpuinfo(text: &str) -> Vec<CpuInfoBlock> {
    let mut out = Vec::new();
    let mut cur = CpuInfoBlock::default();
    for line in text.lines() {
        if line.trim().is_empty() {
            if !cur.fields.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            cur.fields
                .push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    if !cur.fields.is_empty() {
        out.push(cur);
    }
    out
}

/// Per-CPU "cpu MHz" from `/proc/cpuinfo` blocks, indexed by processor number.
pub fn cpuinfo_mhz(blocks: &[CpuInfoBlock]) -> BTreeMap<u32, f64> {
    let mut out = BTreeMap::new();
    for b in blocks {
        let (Some(p), Some(m)) = (b.get("processor"), b.get("cpu MHz")) else {
            continue;
        };
        if let (Ok(p), Ok(m)) = (p.parse::<u32>(), m.parse::<f64>()) {
            if m.is_finite() && m > 0.0 {
                out.insert(p, m);
            }
        }
    }
    out
}

/// Parse `/proc/meminfo` into bytes (`kB` values times 1024; unit-less counts as is).
pub fn parse_meminfo(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let mut it = v.split_ascii_whitespace();
        let Some(Ok(n)) = it.next().map(str::parse::<u64>) else {
            continue;
        };
        let n = match it.next() {
            Some("kB") => n.saturating_mul(1024),
            _ => n,
        };
        out.insert(k.trim().to_string(), n);
    }
    out
}

/// Parse a cpufreq `scaling_cur_freq` (or `cpuinfo_max_freq`...) file: kHz to MHz.
pub fn parse_khz_as_mhz(text: &str) -> Option<f64> {
    let khz: u64 = text.trim().parse().ok()?;
    Some(khz as f64 / 1000.0)
}

/// Parse a sysfs cache size (`48K`, `2048K`, `32M`) into bytes.
pub fn parse_cache_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (num, mult) = match t.chars().last()? {
        'K' | 'k' => (&t[..t.len() - 1], 1024),
        'M' | 'm' => (&t[..t.len() - 1], 1024 * 1024),
        'G' | 'g' => (&t[..t.len() - 1], 1024 * 1024 * 1024),
        _ => (t, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mult)
}

/// `ipmitool dcmi power reading`, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct DcmiReading {
    pub instantaneous_w: f64,
    pub min_w: Option<f64>,
    pub max_w: Option<f64>,
    pub average_w: Option<f64>,
    /// `Power reading state is: activated|deactivated`.
    pub activated: Option<bool>,
}

/// Parse the output of `ipmitool dcmi power reading`.
///
/// ipmitool (`lib/ipmi_dcmi.c`, `ipmi_dcmi_pwr_rd`) prints
/// `    Instantaneous power reading:              %8d Watts` and siblings; some
/// builds and look-alike tools put the colon after the padding
/// (`Instantaneous power reading              : 214      Watts`), so the value is the
/// first number after the label, whatever sits between. Integer watts only.
pub fn parse_dcmi_power_reading(text: &str) -> Result<DcmiReading, String> {
    fn value_after(text: &str, label: &str) -> Option<f64> {
        let lower_label = label.to_ascii_lowercase();
        for line in text.lines() {
            let lower = line.to_ascii_lowercase();
            let Some(pos) = lower.find(&lower_label) else {
                continue;
            };
            let rest = &line[pos + label.len()..];
            return rest
                .split(|c: char| c.is_whitespace() || c == ':')
                .find(|t| !t.is_empty())
                .and_then(|t| t.parse::<f64>().ok())
                .filter(|w| w.is_finite() && *w >= 0.0);
        }
        None
    }
    let instantaneous_w = value_after(text, "Instantaneous power reading").ok_or_else(|| {
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        format!("no `Instantaneous power reading` in ipmitool output (first line: {first:?})")
    })?;
    let activated = text.lines().find_map(|l| {
        let l = l.to_ascii_lowercase();
        if !l.contains("power reading state is") {
            return None;
        }
        if l.contains("deactivated") {
            Some(false)
        } else if l.contains("activated") {
            Some(true)
        } else {
            None
        }
    });
    Ok(DcmiReading {
        instantaneous_w,
        min_w: value_after(text, "Minimum during sampling period"),
        max_w: value_after(text, "Maximum during sampling period"),
        average_w: value_after(text, "Average power reading over sample period"),
        activated,
    })
}

/// The most one server can draw, in watts: a meter reading above it is in the wrong
/// unit (mW) or garbage, not a measurement (the densest GPU servers draw about 10 kW).
pub const METER_MAX_W: f64 = 100_000.0;

/// What a unit a meter printed a number in makes of it: watts at a scale (`kW` is
/// 1000), or why it is no power (`V`, `VA`, `kWh`). None for a word that is no unit.
fn meter_unit(unit: &str) -> Option<Result<f64, &'static str>> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "w" | "watt" | "watts" => Ok(1.0),
        "kw" => Ok(1e3),
        // `mW` and `MW` differ by case alone, and only one of them is a meter's.
        "mw" if unit.starts_with('m') => Ok(1e-3),
        "mw" => Ok(1e6),
        "va" | "kva" => Err("apparent power (VA), not watts"),
        "wh" | "kwh" | "j" | "kj" => Err("energy, not power"),
        "v" | "mv" => Err("volts, not watts"),
        "a" | "ma" => Err("amperes, not watts"),
        "%" => Err("a percentage, not watts"),
        _ => return None,
    })
}

/// A number of a meter's output and the unit glued to it or printed after it: its watts
/// in the unit, or why it is none.
struct MeterNumber {
    /// As printed, with its unit: `0.42 kW`.
    text: String,
    watts: Result<f64, &'static str>,
}

/// The numbers of a meter's output, each with its unit: `231.5`, `231.5W`, `0.42 kW`,
/// `450mW`, `power: 99 watts`; a token that is no number, or a number glued to a word
/// that is no unit (`eth0`), is none.
fn meter_numbers(text: &str) -> Vec<MeterNumber> {
    let tokens: Vec<&str> = text.split_ascii_whitespace().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let tok = tokens[i];
        i += 1;
        // The whole token a number (`1e3` too), or a number and a unit glued to it.
        let (number, glued) = match tok.parse::<f64>() {
            Ok(v) => (v, None),
            Err(_) => {
                let Some((v, u)) = (1..tok.len())
                    .filter(|&k| tok.is_char_boundary(k))
                    .find_map(|k| Some((tok[..k].parse::<f64>().ok()?, meter_unit(&tok[k..])?)))
                else {
                    continue;
                };
                (v, Some(u))
            }
        };
        let unit = glued.or_else(|| {
            let u = meter_unit(tokens.get(i)?)?;
            i += 1;
            Some(u)
        });
        let shown = if glued.is_none() && unit.is_some() {
            format!("{tok} {}", tokens[i - 1])
        } else {
            tok.to_string()
        };
        out.push(MeterNumber {
            text: shown,
            watts: unit.unwrap_or(Ok(1.0)).map(|scale| number * scale),
        });
    }
    out
}

/// Parse a power meter command's output: exactly one number, in watts (`231.5`,
/// `231.5 W`, `231.5W`, `power: 99 watts`) or another scale of them (`0.42 kW`, read
/// 420 W; `450 mW`), more than 0 and at most [`METER_MAX_W`]. Else what is wrong with it,
/// in words that follow "the command " (`printed nothing`, `printed negative watts (-5)`,
/// `printed "230 V": volts, not watts`). Numbers in another quantity's unit beside the
/// watts are left out (`230V 1.2A 276W` is 276 W).
pub fn parse_meter_watts(text: &str) -> Result<f64, String> {
    let all = meter_numbers(text);
    let first_line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let numbers: Vec<(&str, f64)> = all
        .iter()
        .filter_map(|n| Some((n.text.as_str(), *n.watts.as_ref().ok()?)))
        .collect();
    if numbers.is_empty() {
        // Every number it printed, each with what it is (`230V 1.2A` said only "230V").
        let not_watts: Vec<String> = all
            .iter()
            .filter_map(|n| Some(format!("{:?}: {}", n.text, n.watts.err()?)))
            .collect();
        if !not_watts.is_empty() {
            return Err(format!(
                "printed {}; it must print the power in watts (W or kW)",
                not_watts.join(", ")
            ));
        }
    }
    match numbers.as_slice() {
        [] if text.trim().is_empty() => Err("printed nothing".into()),
        [] => Err(format!("printed no watts (first line: {first_line:?})")),
        [(tok, w)] if !w.is_finite() => Err(format!("printed {tok:?}, not a number of watts")),
        [(tok, w)] if *w < 0.0 => Err(format!(
            "printed negative watts ({tok}): a meter reads more than 0 W; check its sign and units"
        )),
        // A running system draws power: 0 W is an outlet switched off, another device, or
        // a meter not reading (stored as a measured 0 W, it read as a server drawing none).
        [(tok, w)] if *w == 0.0 => Err(format!(
            "printed {tok:?}, no power at all, where the system it meters is running: it reads \
             an outlet that is off, another device, or nothing; check what it meters"
        )),
        [(tok, w)] if *w > METER_MAX_W => Err(format!(
            "printed {tok}{}, more than the {} kW one server can draw: check its units (mW?)",
            if tok.ends_with(|c: char| c.is_ascii_alphabetic()) {
                ""
            } else {
                " W"
            },
            METER_MAX_W / 1000.0
        )),
        [(_, w)] => Ok(*w),
        many => Err(format!(
            "printed {} numbers ({}), not one: it must print the watts alone",
            many.len(),
            many.iter()
                .take(4)
                .map(|(t, _)| *t)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The DIMMs `dmidecode -t 17` reports as installed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dimm {
    pub size: String,
    pub kind: Option<String>,
    pub speed: Option<String>,
    pub locator: Option<String>,
}

/// Parse `dmidecode -t 17` (Memory Device records), keeping populated slots only.
pub fn parse_dmidecode_memory(text: &str) -> Vec<Dimm> {
    let mut out = Vec::new();
    let mut cur: Option<Dimm> = None;
    let flush = |cur: &mut Option<Dimm>, out: &mut Vec<Dimm>| {
        if let Some(d) = cur.take() {
            let empty = d.size.is_empty()
                || d.size.starts_with("No Module")
                || d.size == "0"
                || d.size == "Unknown";
            if !empty {
                out.push(d);
            }
        }
    };
    for line in text.lines() {
        if line.trim() == "Memory Device" {
            flush(&mut cur, &mut out);
            cur = Some(Dimm::default());
            continue;
        }
        if line.starts_with("Handle ") {
            flush(&mut cur, &mut out);
            continue;
        }
        let Some(d) = cur.as_mut() else { continue };
        let Some((k, v)) = line.trim().split_once(':') else {
            continue;
        };
        let v = v.trim().to_string();
        match k.trim() {
            "Size" => d.size = v,
            "Type" => d.kind = Some(v),
            "Configured Memory Speed" | "Configured Clock Speed" => d.speed = Some(v),
            "Speed" if d.speed.is_none() => d.speed = Some(v),
            "Locator" => d.locator = Some(v),
            _ => {}
        }
    }
    flush(&mut cur, &mut out);
    out
}

/// A transfer rate no DIMM reaches (DDR5 tops out near 10^4 MT/s): dmidecode text
/// claiming more is garbage, and summing it could reach infinity (`1e308 MT/s`).
const MAX_DIMM_MTS: f64 = 1e6;

/// The highest DRAM bandwidth these DIMMs can deliver, GB/s (10^9 B/s): each DIMM's
/// transfer rate x 8 bytes, summed. A DIMM sits on one channel and a channel carries 8
/// bytes per transfer (DDR5's two 32-bit subchannels included), and there are never more
/// populated channels than DIMMs, so this is never below the true peak (it is above it
/// when channels hold two DIMMs). dmidecode before 3.3 printed the rate as "MHz"; it
/// was the transfer rate all along. None: no DIMM, or one whose rate is not given (the
/// bound would not be a bound).
pub fn dram_peak_gb_per_s(dimms: &[Dimm]) -> Option<f64> {
    if dimms.is_empty() {
        return None;
    }
    let mut total = 0.0;
    for d in dimms {
        let speed = d.speed.as_deref()?;
        let mts: f64 = speed
            .strip_suffix("MT/s")
            .or_else(|| speed.strip_suffix("MHz"))?
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| (0.0..MAX_DIMM_MTS).contains(v) && *v > 0.0)?;
        total += mts * 1e6 * 8.0 / 1e9;
    }
    Some(total)
}

/// `KEY="value"` lines of `os-release`, unquoted.
pub fn parse_os_release(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            let v = v.trim().trim_matches('"').trim_matches('\'');
            out.insert(k.trim().to_string(), v.to_string());
        }
    }
    out
}

/// The bracketed choice of a sysfs selector file (`always [madvise] never` -> `madvise`).
pub fn parse_bracketed_choice(text: &str) -> Option<String> {
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    Some(text[start + 1..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzz_regression_absurd_dimm_speed_is_no_bound() {
        // Found by fuzz_proc_and_tool_parsers: `1e308 MT/s` made the peak infinite.
        let text = "Memory Device\n\tSize: 32 GB\n\tConfigured Memory Speed: 1e308 MT/s\n";
        assert_eq!(dram_peak_gb_per_s(&parse_dmidecode_memory(text)), None);
        let real = "Memory Device\n\tSize: 32 GB\n\tSpeed: 4800 MT/s\n";
        assert_eq!(
            dram_peak_gb_per_s(&parse_dmidecode_memory(real)),
            Some(38.4)
        );
    }

    #[test]
    fn pid_stat_with_spaces_and_parens_in_comm() {
        let s = "4242 (my (odd) prog) S 1 4242 4242 0 -1 4194560 100 0 0 0 \
                 250 75 0 0 20 0 3 0 12345 1000000 200 18446744073709551615";
        let p = parse_pid_stat(s).unwrap();
        assert_eq!(p.pid, 4242);
        assert_eq!(p.comm, "my (odd) prog");
        assert_eq!(p.state, 'S');
        assert_eq!((p.utime, p.stime), (250, 75));
        assert_eq!((p.ppid, p.cutime, p.cstime, p.starttime), (1, 0, 0, 12345));
    }

    #[test]
    fn pid_stat_truncated_is_none() {
        assert_eq!(parse_pid_stat("12 (x) R 1 2 3"), None);
        assert_eq!(parse_pid_stat(""), None);
        assert_eq!(parse_pid_stat(")( 1 2"), None);
    }

    #[test]
    fn old_kernel_stat_lines_with_fewer_columns() {
        let s = "cpu  10 0 5 100\ncpu0 10 0 5 100\nctxt 7\nintr 9 1 2\n";
        let p = parse_proc_stat(s);
        assert_eq!(p.all.unwrap().idle, 100);
        assert_eq!(p.all.unwrap().steal, 0);
        assert_eq!(p.cpus.len(), 1);
        assert_eq!((p.ctxt, p.intr), (Some(7), Some(9)));
    }

    #[test]
    fn net_dev_glued_colon() {
        let s = "Inter-|   Receive |  Transmit\n face |bytes packets|bytes\n\
                 eth0:4294967295 5 0 0 0 0 0 0 100 6 0 0 0 0 0 0\n";
        let v = parse_net_dev(s);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].rx_bytes, 4294967295);
        assert_eq!(v[0].tx_packets, 6);
    }

    #[test]
    fn cache_sizes() {
        assert_eq!(parse_cache_size("48K\n"), Some(48 * 1024));
        assert_eq!(parse_cache_size("266240K"), Some(266240 * 1024));
        assert_eq!(parse_cache_size("32M"), Some(32 << 20));
        assert_eq!(parse_cache_size("K"), None);
        assert_eq!(parse_cache_size(""), None);
    }

    #[test]
    fn meter_output_forms() {
        assert_eq!(parse_meter_watts("231.5\n"), Ok(231.5));
        assert_eq!(parse_meter_watts("231.5 W"), Ok(231.5));
        assert_eq!(parse_meter_watts("power: 99W"), Ok(99.0));
        assert_eq!(parse_meter_watts("power: 99 watts\n"), Ok(99.0));
        // A running system draws power: 0 W is a meter that reads nothing of it.
        assert!(parse_meter_watts("0")
            .unwrap_err()
            .contains("no power at all"));
        assert!(parse_meter_watts("0.0 W")
            .unwrap_err()
            .contains("check what it meters"));
        // Another scale of watts is read in it: `0.42 kW` read 0.42 W, the unit dropped.
        assert_eq!(parse_meter_watts("0.42 kW"), Ok(420.0));
        assert_eq!(parse_meter_watts("0.42kW"), Ok(420.0));
        assert_eq!(parse_meter_watts("450 mW"), Ok(0.45));
        assert_eq!(parse_meter_watts("1e3"), Ok(1000.0));
        let err = |t: &str| parse_meter_watts(t).unwrap_err();
        assert!(
            err("NaN").contains("not a number of watts"),
            "{}",
            err("NaN")
        );
        assert!(err("inf").contains("not a number of watts"));
        assert!(err("-5").contains("negative watts (-5)"), "{}", err("-5"));
        // Another quantity is no power.
        for (t, why) in [
            ("230 V", "volts"),
            ("1.2A", "amperes"),
            ("500 VA", "apparent power"),
            ("3.5 kWh", "energy"),
        ] {
            assert!(err(t).contains(why), "{t}: {}", err(t));
            assert!(err(t).contains(&format!("{t:?}")), "{t}: {}", err(t));
        }
        // Every one of them is said, not the first alone.
        let both = err("230V 1.2A");
        assert!(
            both.starts_with("printed \"230V\": volts, not watts, \"1.2A\": amperes, not watts;"),
            "{both}"
        );
        // Beside the watts, another quantity is left out.
        assert_eq!(parse_meter_watts("230 V 1.2 A 276 W"), Ok(276.0));
        assert_eq!(parse_meter_watts("230V 1.2A 276W"), Ok(276.0));
        assert!(
            err("0.2 MW").contains("printed 0.2 MW, more than"),
            "{}",
            err("0.2 MW")
        );
        assert!(err("1e300").contains("100 kW"), "{}", err("1e300"));
        assert!(
            err("100\n200").contains("2 numbers (100, 200)"),
            "{}",
            err("100\n200")
        );
        assert_eq!(err(""), "printed nothing");
        assert_eq!(err("\n  \n"), "printed nothing");
        assert!(
            err("watts: lots").contains("\"watts: lots\""),
            "{}",
            err("watts: lots")
        );
    }

    #[test]
    fn bracketed() {
        assert_eq!(
            parse_bracketed_choice("always [madvise] never\n").as_deref(),
            Some("madvise")
        );
        assert_eq!(parse_bracketed_choice("none"), None);
    }
}
