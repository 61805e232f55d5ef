//! The TCO plan: what a user writes in `PLAN.toml`. Plain data, parsed and checked here,
//! evaluated in `compute`. Every figure a platform needs is either given in the plan or
//! taken from a stored run (the CLI loads the run; `from_run` reads it).

use serde::{Deserialize, Serialize};

/// The highest PUE a plan may give: worse than any data centre's.
pub const MAX_PUE: f64 = 5.0;

/// A rack-level TCO plan: one rack, one energy price, several platforms to compare.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Heading of the table ("TCO based on Redis").
    #[serde(default)]
    pub title: Option<String>,
    /// Currency symbol printed before money figures.
    #[serde(default = "default_currency")]
    pub currency: String,
    /// Period of the TCO in years (energy and infrastructure are counted over it).
    pub years: f64,
    /// Energy price per kWh at the meter, in `currency`.
    pub energy_price_per_kwh: f64,
    /// Power usage effectiveness: facility energy / IT energy (1.0 = no overhead).
    #[serde(default = "one")]
    pub pue: f64,
    /// Infrastructure (power and cooling plant) cost per provisioned watt, charged once
    /// for the period. Absent: no infrastructure line.
    #[serde(default)]
    pub infra_cost_per_w: Option<f64>,
    /// What a provisioned watt is: the server's watt (`it`) or its watt at the facility
    /// (`facility`: server W x PUE).
    #[serde(default)]
    pub infra_basis: InfraBasis,
    /// Unit of the performance figure (`ops/s`), for the table.
    #[serde(default)]
    pub perf_unit: Option<String>,
    /// Platform the Difference column divides by; default the first platform (as the
    /// report's summary).
    #[serde(default)]
    pub baseline: Option<String>,
    pub rack: Rack,
    /// Empty when the plan has none: [`Plan::check`] then says what a platform needs.
    #[serde(rename = "platform", default)]
    pub platforms: Vec<Platform>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InfraBasis {
    #[default]
    It,
    Facility,
}

/// The rack every platform is packed into.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rack {
    /// Power the rack is provisioned for, watts (e.g. 12000).
    pub power_budget_w: f64,
    /// Power reserved for equipment other than servers (top-of-rack switches), watts.
    #[serde(default)]
    pub reserved_w: f64,
    /// Rack units available to servers (after switches, patch panels, PDUs).
    pub rack_units: u32,
}

/// How a performance figure is taken from a stored run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PerfFrom {
    /// Geometric mean across the run's tests (each test at its best sweep point), as the
    /// Redis study's Table A1.
    #[default]
    Geomean,
    /// The highest headline figure of the run (of `test` when given).
    Max,
}

/// One named figure; `perf_tests` are combined by geometric mean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedFigure {
    pub name: String,
    pub value: f64,
}

/// One platform: a server, its bill of materials, its power and its performance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Platform {
    pub name: String,
    /// Shown under the name (`two boards per chassis, extrapolated`).
    #[serde(default)]
    pub note: Option<String>,
    /// A stored run (id, prefix or label) to take power and/or performance from, for
    /// whatever is not given below.
    #[serde(default)]
    pub run: Option<String>,
    /// Power of one board under the workload, watts (before `boards_per_server`).
    #[serde(default)]
    pub power_w: Option<f64>,
    /// Performance of one board (before `boards_per_server`).
    #[serde(default)]
    pub perf: Option<f64>,
    /// Per-test figures of one board, combined by geometric mean when `perf` is absent.
    #[serde(default)]
    pub perf_tests: Vec<NamedFigure>,
    /// With `run`: how performance is taken from it.
    #[serde(default)]
    pub perf_from: PerfFrom,
    /// With `run`: only this test's results.
    #[serde(default)]
    pub test: Option<String>,
    /// With `run` and `perf_from = "geomean"`: the tests of the geometric mean, named as
    /// `rackbench report --tests` names them (default: every test of the run); taken at
    /// `params` (`{ instances = 2 }`) or each at its best, as the report's summary does.
    #[serde(default)]
    pub tests: Vec<String>,
    /// With `run`: only results whose parameters have these values (`{ instances = 46 }`).
    #[serde(default)]
    pub params: std::collections::BTreeMap<String, serde_json::Value>,
    /// Extrapolation factor: boards (or sockets) per server. Scales performance, power and
    /// the bill-of-materials items marked `per_board`.
    #[serde(default = "one")]
    pub boards_per_server: f64,
    /// Server height in rack units.
    #[serde(default = "one_u")]
    pub height_u: u32,
    /// The bill of materials: a list of items, or `bom = 0` for no capex on purpose.
    /// Required: a forgotten bill would be $0 capex, and a perf/$ ratio published from it.
    #[serde(default)]
    pub bom: Option<Bom>,
}

/// A platform's bill of materials as the plan gives it.
#[derive(Debug, Clone, PartialEq)]
pub enum Bom {
    /// Its items (`bom = [{ name = "Server", unit_cost = 5000 }]`).
    Items(Vec<BomItem>),
    /// `bom = 0`: no capex counted, on purpose (a platform already owned).
    Zero,
}

impl Bom {
    /// The items of the bill (none for `bom = 0`).
    pub fn items(&self) -> &[BomItem] {
        match self {
            Bom::Items(items) => items,
            Bom::Zero => &[],
        }
    }
}

impl Serialize for Bom {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Bom::Items(items) => items.serialize(s),
            Bom::Zero => s.serialize_u8(0),
        }
    }
}

impl<'de> Deserialize<'de> for Bom {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        const WANT: &str = "a list of items (`[{ name = \"Server\", unit_cost = 5000 }]`), or 0 to count no capex on purpose";
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Bom;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(WANT)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Bom, A::Error> {
                Vec::<BomItem>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(Bom::Items)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Bom, E> {
                self.visit_f64(v as f64)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Bom, E> {
                self.visit_f64(v as f64)
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Bom, E> {
                if v == 0.0 {
                    Ok(Bom::Zero)
                } else {
                    Err(E::custom(format!(
                        "`bom = {v}`: a bill of materials is {WANT}"
                    )))
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// One bill-of-materials line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BomItem {
    pub name: String,
    pub unit_cost: f64,
    #[serde(default = "one")]
    pub quantity: f64,
    /// Quantity is per board: multiplied by `boards_per_server`.
    #[serde(default)]
    pub per_board: bool,
}

fn default_currency() -> String {
    "$".to_string()
}
fn one() -> f64 {
    1.0
}
fn one_u() -> u32 {
    1
}

impl Plan {
    /// Parse a TOML plan and check it. Errors name the key to fix.
    pub fn from_toml(text: &str) -> anyhow::Result<Plan> {
        let plan: Plan = toml::from_str(text)
            .map_err(|e| anyhow::anyhow!("TCO plan is not valid TOML for rackbench: {e}"))?;
        plan.check()?;
        Ok(plan)
    }

    /// Reject figures that would make the model meaningless (negative prices, no rack).
    pub fn check(&self) -> anyhow::Result<()> {
        let pos = |v: f64, what: &str| -> anyhow::Result<()> {
            if !(v.is_finite() && v > 0.0) {
                anyhow::bail!("TCO plan: {what} must be a positive number (got {v})");
            }
            Ok(())
        };
        let nonneg = |v: f64, what: &str| -> anyhow::Result<()> {
            if !(v.is_finite() && v >= 0.0) {
                anyhow::bail!("TCO plan: {what} must be zero or more (got {v})");
            }
            Ok(())
        };
        pos(self.years, "`years`")?;
        nonneg(self.energy_price_per_kwh, "`energy_price_per_kwh`")?;
        // Facility power over IT power: 1.1 for the best sites, about 1.6 on average, 3 for
        // the worst rooms. 120 is no site's (a percentage typed?).
        if !(1.0..=MAX_PUE).contains(&self.pue) {
            anyhow::bail!(
                "TCO plan: `pue` is the facility's power over its IT power, 1.0 to {MAX_PUE} \
                 (1.6 is a typical data centre); {} is no site's",
                self.pue
            );
        }
        if let Some(c) = self.infra_cost_per_w {
            nonneg(c, "`infra_cost_per_w`")?;
        }
        pos(self.rack.power_budget_w, "`rack.power_budget_w`")?;
        nonneg(self.rack.reserved_w, "`rack.reserved_w`")?;
        if self.rack.reserved_w >= self.rack.power_budget_w {
            anyhow::bail!(
                "TCO plan: `rack.reserved_w` ({}) leaves no power for servers out of `rack.power_budget_w` ({})",
                self.rack.reserved_w,
                self.rack.power_budget_w
            );
        }
        if self.rack.rack_units == 0 {
            anyhow::bail!("TCO plan: `rack.rack_units` must be at least 1");
        }
        if self.platforms.is_empty() {
            anyhow::bail!("TCO plan: add at least one [[platform]] table (name, bom, power_w or run, perf or run)");
        }
        for p in &self.platforms {
            let w = |k: &str| format!("platform `{}`: {k}", p.name);
            pos(p.boards_per_server, &w("`boards_per_server`"))?;
            if p.height_u == 0 {
                anyhow::bail!(
                    "TCO plan: platform `{}`: `height_u` must be at least 1",
                    p.name
                );
            }
            if let Some(v) = p.power_w {
                pos(v, &w("`power_w`"))?;
            }
            if let Some(v) = p.perf {
                pos(v, &w("`perf`"))?;
            }
            for t in &p.perf_tests {
                pos(t.value, &w(&format!("perf_tests `{}`: `value`", t.name)))?;
            }
            let items = match &p.bom {
                None => anyhow::bail!(
                    "TCO plan: platform `{}` has no bill of materials: add `bom = [{{ name = \"Server\", unit_cost = <cost> }}, ...]`, or `bom = 0` to count no capex on purpose (without either, its capex would be $0 and its perf/$ a figure from a forgotten input)",
                    p.name
                ),
                Some(Bom::Items(items)) if items.is_empty() => anyhow::bail!(
                    "TCO plan: platform `{}`: `bom = []` lists no item: list its parts (`bom = [{{ name = \"Server\", unit_cost = <cost> }}]`), or write `bom = 0` to count no capex on purpose",
                    p.name
                ),
                Some(b) => b.items(),
            };
            for b in items {
                nonneg(b.unit_cost, &w(&format!("bom `{}`: `unit_cost`", b.name)))?;
                nonneg(b.quantity, &w(&format!("bom `{}`: `quantity`", b.name)))?;
            }
            if p.power_w.is_none() && p.run.is_none() {
                anyhow::bail!(
                    "TCO plan: platform `{}` has no power: add `power_w = <watts per board>` or `run = \"<run id>\"`",
                    p.name
                );
            }
            if p.perf.is_none() && p.perf_tests.is_empty() && p.run.is_none() {
                anyhow::bail!(
                    "TCO plan: platform `{}` has no performance: add `perf = <figure>`, `perf_tests = [...]` or `run = \"<run id>\"`",
                    p.name
                );
            }
        }
        let mut names: Vec<&str> = self.platforms.iter().map(|p| p.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            anyhow::bail!(
                "TCO plan: two platforms are named `{}`; names must differ",
                w[0]
            );
        }
        if let Some(b) = &self.baseline {
            if !self.platforms.iter().any(|p| &p.name == b) {
                anyhow::bail!(
                    "TCO plan: `baseline = \"{b}\"` names no platform; use one of: {}",
                    names.join(", ")
                );
            }
        }
        Ok(())
    }
}
