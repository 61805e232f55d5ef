//! The one rule that says which power source is the server's power figure: the sampler
//! labels each step with it, the report divides by it for perf/W, and the TCO model fills
//! racks with it. It lives here, beside the types it reads, so that all three agree.

use serde::{Deserialize, Serialize};

use crate::PowerSummary;

/// The one power figure to use for perf/W and TCO, with where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadlinePower {
    pub mean_watts: f64,
    /// `meter:system`, `ipmi-dcmi:system`, `rapl:package-0+dram-0+package-1+dram-1`.
    pub provenance: String,
    /// The source (`meter`, `ipmi-dcmi`, `hwmon`, `model`, `rapl`).
    pub source: String,
    /// The zones of that source whose watts were added (one but for RAPL).
    pub zones: Vec<String>,
    /// The whole server (false: CPU packages and DRAM only).
    pub whole_system: bool,
    /// From a declared power model, not a measurement.
    pub modelled: bool,
}

impl HeadlinePower {
    /// `ipmi-dcmi system`, `rapl package-0+dram-0`, `model system (60:160 W)`: how a
    /// figure's source is named wherever it is shown ([`crate::power_source_named`]).
    pub fn named(&self, run: &crate::RunRecord) -> String {
        crate::power_source_named(run, &self.source, &self.zones.join("+"), self.modelled)
    }
}

/// Whole-server sources that measure, most trusted first. A wall meter is an instrument
/// the user named (`--power-meter`), as SPECpower requires one; IPMI DCMI is the BMC's
/// reading of its power supplies, integer watts; an ACPI power meter (hwmon
/// `power_meter`) is the firmware's own. `ipmi` is an older spelling of `ipmi-dcmi`.
const MEASURED_WHOLE: [&[&str]; 3] = [&["meter"], &["ipmi-dcmi", "ipmi"], &["hwmon"]];

/// A RAPL zone that is counted: a package (`package-0`, or `package-0-die-1` where the
/// kernel gives each die of a multi-die package its own zone) or a DRAM domain
/// (`dram-0`). Core and uncore (`core-0`, `uncore-0`, or `package-0-core` as some kernels
/// name them) are inside their package, so adding them counts the same joules twice;
/// `psys` is the platform as the SoC sees it and overlaps everything.
fn is_rapl_package_or_dram(zone: &str) -> bool {
    let number = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    let package = zone.strip_prefix("package-").is_some_and(|rest| {
        number(rest)
            || rest
                .split_once("-die-")
                .is_some_and(|(p, d)| number(p) && number(d))
    });
    let dram = zone.strip_prefix("dram-").is_some_and(number) || zone == "dram";
    package || dram
}

fn is_rapl_package(zone: &str) -> bool {
    zone.starts_with("package-") && is_rapl_package_or_dram(zone)
}

fn single(p: &PowerSummary) -> HeadlinePower {
    HeadlinePower {
        mean_watts: p.mean_watts,
        provenance: format!("{}:{}", p.source, p.zone),
        source: p.source.clone(),
        zones: vec![p.zone.clone()],
        whole_system: p.whole_system,
        modelled: p.modelled,
    }
}

/// The server's power among one host's power summaries for one step, in this order:
///
/// 1. measured, whole server: a wall meter, then IPMI DCMI, then a whole-system hwmon
///    sensor (the ACPI power meter);
/// 2. the declared power model (whole server, `modelled`): the user declared it because
///    nothing above was there, and it must win over RAPL, or it would be ignored on
///    every machine that has RAPL while perf/W and TCO need the whole server;
/// 3. RAPL: the sum of every package and DRAM zone, never their core/uncore subzones
///    nor psys (`whole_system` false: CPU and memory only, labelled so wherever shown);
/// 4. nothing (None).
///
/// Within one source the first whole-system zone is taken. Component hwmon sensors
/// (a CPU's or a GPU's) are never summed: nothing says which of them overlap.
pub fn headline(power: &[PowerSummary]) -> Option<HeadlinePower> {
    for names in MEASURED_WHOLE {
        if let Some(p) = power
            .iter()
            .find(|p| names.contains(&p.source.as_str()) && p.whole_system && !p.modelled)
        {
            return Some(single(p));
        }
    }
    if let Some(p) = power.iter().find(|p| p.modelled && p.whole_system) {
        return Some(single(p));
    }
    let rapl: Vec<&PowerSummary> = power
        .iter()
        .filter(|p| p.source == "rapl" && !p.modelled && is_rapl_package_or_dram(&p.zone))
        .collect();
    // DRAM without a package is no CPU-and-memory figure (a package zone this rule does
    // not know would leave only the DRAM's few watts to divide by).
    if !rapl.iter().any(|p| is_rapl_package(&p.zone)) {
        return None;
    }
    let zones: Vec<String> = rapl.iter().map(|p| p.zone.clone()).collect();
    Some(HeadlinePower {
        mean_watts: rapl.iter().map(|p| p.mean_watts).sum(),
        provenance: format!("rapl:{}", zones.join("+")),
        source: "rapl".into(),
        zones,
        whole_system: false,
        modelled: false,
    })
}

/// The watts of the same source and zones as `h` in other summaries (idle power before
/// the load, to subtract): None unless every zone is there, so a partial sum is never
/// passed off as the idle figure.
pub fn same_source_watts(h: &HeadlinePower, power: &[PowerSummary]) -> Option<f64> {
    let found: Vec<f64> = h
        .zones
        .iter()
        .filter_map(|z| {
            power
                .iter()
                .find(|p| p.source == h.source && &p.zone == z && p.modelled == h.modelled)
                .map(|p| p.mean_watts)
        })
        .collect();
    (found.len() == h.zones.len()).then(|| found.iter().sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ps(source: &str, zone: &str, w: f64) -> PowerSummary {
        let whole = matches!(source, "meter" | "ipmi-dcmi" | "model")
            || (source == "hwmon" && zone.starts_with("power_meter/"));
        PowerSummary {
            source: source.into(),
            zone: zone.into(),
            mean_watts: w,
            max_watts: w,
            whole_system: whole,
            modelled: source == "model",
        }
    }

    fn pick(power: &[PowerSummary]) -> (f64, String, bool, bool) {
        let h = headline(power).expect("a headline");
        (h.mean_watts, h.provenance, h.whole_system, h.modelled)
    }

    fn rapl_two_sockets() -> Vec<PowerSummary> {
        vec![
            ps("rapl", "package-0", 100.0),
            ps("rapl", "core-0", 80.0),
            ps("rapl", "uncore-0", 5.0),
            ps("rapl", "dram-0", 10.0),
            ps("rapl", "package-1", 90.0),
            ps("rapl", "dram-1", 12.0),
        ]
    }

    #[test]
    fn meter_wins_over_ipmi() {
        let p = [
            ps("ipmi-dcmi", "system", 410.0),
            ps("meter", "system", 430.0),
        ];
        assert_eq!(pick(&p), (430.0, "meter:system".into(), true, false));
    }

    #[test]
    fn ipmi_wins_over_rapl() {
        let mut p = rapl_two_sockets();
        p.push(ps("ipmi-dcmi", "system", 410.0));
        assert_eq!(pick(&p), (410.0, "ipmi-dcmi:system".into(), true, false));
    }

    #[test]
    fn whole_system_hwmon_alone() {
        let p = [
            ps("hwmon", "amdgpu/PPT", 40.0),
            ps("hwmon", "power_meter/power1", 250.0),
        ];
        assert_eq!(
            pick(&p),
            (250.0, "hwmon:power_meter/power1".into(), true, false)
        );
        // A component hwmon sensor alone is not the server's power.
        assert_eq!(headline(&p[..1]), None);
    }

    #[test]
    fn rapl_package_plus_dram() {
        let p = [
            ps("rapl", "package-0", 100.0),
            ps("rapl", "dram-0", 10.0),
            ps("rapl", "package-1", 90.0),
            ps("rapl", "dram-1", 12.0),
        ];
        assert_eq!(
            pick(&p),
            (
                212.0,
                "rapl:package-0+dram-0+package-1+dram-1".into(),
                false,
                false
            )
        );
    }

    #[test]
    fn rapl_subzones_are_inside_their_package() {
        let mut p = rapl_two_sockets();
        p.push(ps("rapl", "package-0-core", 70.0));
        p.push(ps("rapl", "package-0-uncore", 4.0));
        p.push(ps("rapl", "psys", 260.0));
        let h = headline(&p).unwrap();
        assert_eq!(h.mean_watts, 212.0);
        assert_eq!(h.zones, ["package-0", "dram-0", "package-1", "dram-1"]);
        // Subzones alone (no package read) are no figure at all.
        assert_eq!(headline(&[ps("rapl", "core-0", 80.0)]), None);
        // Nor is DRAM alone: its few watts are no CPU-and-memory figure.
        assert_eq!(headline(&[ps("rapl", "dram-0", 15.0)]), None);
    }

    /// A multi-die package has a zone per die (`package-0-die-1`): every die counts, as
    /// a package does (left out, the headline was the DRAM's watts alone).
    #[test]
    fn rapl_dies_of_a_package_count() {
        let p = [
            ps("rapl", "package-0-die-0", 200.0),
            ps("rapl", "package-0-die-1", 190.0),
            ps("rapl", "dram-0", 15.0),
            ps("rapl", "dram-1", 14.0),
            ps("rapl", "package-0-die-0-core", 150.0),
        ];
        let h = headline(&p).unwrap();
        assert_eq!(h.mean_watts, 419.0);
        assert_eq!(
            h.zones,
            ["package-0-die-0", "package-0-die-1", "dram-0", "dram-1"]
        );
    }

    #[test]
    fn model_alone_is_modelled_whole_server() {
        let p = [ps("model", "system", 300.0)];
        assert_eq!(pick(&p), (300.0, "model:system".into(), true, true));
    }

    #[test]
    fn model_wins_over_rapl_and_loses_to_a_measurement() {
        let mut p = rapl_two_sockets();
        p.push(ps("model", "system", 300.0));
        assert_eq!(pick(&p), (300.0, "model:system".into(), true, true));
        p.push(ps("hwmon", "power_meter/power1", 280.0));
        assert_eq!(pick(&p).1, "hwmon:power_meter/power1");
    }

    #[test]
    fn nothing_gives_nothing() {
        assert_eq!(headline(&[]), None);
    }

    #[test]
    fn idle_of_the_same_zones_only() {
        let h = headline(&rapl_two_sockets()).unwrap();
        let idle = [
            ps("rapl", "package-0", 40.0),
            ps("rapl", "dram-0", 5.0),
            ps("rapl", "package-1", 38.0),
            ps("rapl", "dram-1", 6.0),
            ps("rapl", "core-0", 20.0),
        ];
        assert_eq!(same_source_watts(&h, &idle), Some(89.0));
        assert_eq!(same_source_watts(&h, &idle[..3]), None);
    }
}
