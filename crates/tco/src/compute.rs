//! The cost model itself: a plan plus the figures taken from runs in, the table out.
//!
//! Servers per rack is the smaller of the power limit ((budget - reserved) / server W,
//! rounded down) and the space limit (rack units / server height); the result says which
//! binds. Energy is server W x hours x price x PUE; infrastructure is provisioned W x rate,
//! once for the period. Every rack figure is the server figure times servers per rack, so
//! perf/$ and perf/W are the same per server and per rack.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::plan::{InfraBasis, Plan};

const HOURS_PER_YEAR: f64 = 24.0 * 365.0;

/// The mark on every table cell derived from modelled power, as the report's efficiency
/// table, `show` and `compare` mark theirs.
pub const MODELLED_MARK: &str = "(MODELLED)";

/// A figure taken from a stored run, with where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sourced {
    pub value: f64,
    /// Human description: `run 2026...: ipmi-dcmi system, mean of 3 point(s), each the
    /// mean of its repetitions`.
    pub source: String,
    /// Computed from a declared power model rather than measured.
    #[serde(default)]
    pub modelled: bool,
    /// The declared power model a modelled figure is of (`60:160`: idle and busy watts),
    /// when its run kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Unit of a performance figure (`ops/s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// The id of the stored run it was taken from (a report lists it among its sources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

/// What the CLI resolved from a platform's `run`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FromRun {
    /// Whole-server power of one board (mean over the selected results).
    pub power_w: Option<Sourced>,
    /// Performance of one board.
    pub perf: Option<Sourced>,
    /// Why power or performance could not be taken from the run.
    #[serde(default)]
    pub problems: Vec<String>,
    /// The warnings the results behind the figures carry (`low_hit_ratio (get)`): a
    /// suspect figure is not carried into a TCO unmarked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The tests the performance is the geometric mean of, where it is one (`perf_from =
    /// "geomean"`), sorted: named as the summary names the points taken (a setting they
    /// share, chosen or fixed, is none of their names; a headline's buffer size is).
    /// Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub perf_rows: Vec<String>,
    /// The results the performance figure was taken from (the best point's, or the
    /// summary's points a geometric mean is over); empty where the plan gives it. The
    /// settings they ran at are compared across platforms by the caller, who knows which
    /// name a platform and which a load level.
    #[serde(skip)]
    pub perf_points: Vec<model::ResultRecord>,
}

/// Which limit decides how many servers a rack holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Binding {
    Power,
    Space,
    /// Both limits give the same count.
    Both,
}

impl Binding {
    pub fn as_str(self) -> &'static str {
        match self {
            Binding::Power => "power",
            Binding::Space => "space",
            Binding::Both => "power and space",
        }
    }
}

/// One money line of the bill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostLine {
    pub name: String,
    pub per_server: f64,
    pub per_rack: f64,
}

/// One platform's evaluated TCO.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlatformResult {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub boards_per_server: f64,
    pub height_u: u32,
    pub server_power_w: f64,
    pub power_source: String,
    /// The power figure is modelled, not measured: every figure derived from it is too.
    pub power_modelled: bool,
    pub perf_per_server: f64,
    pub perf_source: String,
    /// The stored runs (ids) its power and performance were taken from, each once; empty
    /// when the plan gives both.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<String>,
    /// The warnings of the run's results its figures were taken from (none for figures
    /// the plan gives); the table marks the platform and a footnote names them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    pub power_limited_servers: u32,
    pub space_limited_servers: u32,
    pub servers_per_rack: u32,
    pub binding: Binding,
    pub rack_power_w: f64,
    /// Bill of materials lines (capex), server and rack.
    pub capex: Vec<CostLine>,
    pub capex_per_server: f64,
    pub capex_per_rack: f64,
    /// Infrastructure cost for the provisioned power (absent when the plan gives no rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infra: Option<CostLine>,
    /// Energy over the period, PUE included.
    pub energy: CostLine,
    pub energy_kwh_per_server: f64,
    pub total_per_server: f64,
    pub total_per_rack: f64,
    pub perf_per_rack: f64,
    /// NaN (`null` in JSON) where the total cost is 0; [`PlatformResult::missing`] says so.
    pub perf_per_dollar: f64,
    pub perf_per_w: f64,
    /// Why a figure above is not a number (`perf_per_dollar`: "total cost is $0"), by
    /// its field's name: a JSON reader's `null` has its reason beside it, as the table's
    /// cell does.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub missing: BTreeMap<String, String>,
}

/// One row of the published table: a figure per platform, per server and per rack, and
/// the ratio of each platform to the baseline ("Difference").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `Capex`, `Opex` or empty.
    pub section: String,
    pub label: String,
    /// `money`, `perf`, `watts`, `count`, `perf_per_money`, `perf_per_w`.
    pub kind: String,
    pub per_server: Vec<f64>,
    pub per_rack: Vec<f64>,
    /// per_server[i] / per_server[baseline]; None where the baseline is 0.
    pub server_ratio: Vec<Option<f64>>,
    pub rack_ratio: Vec<Option<f64>>,
    /// The per-server figure derives from the server's power (its watts, energy,
    /// infrastructure per watt, the total and the per-watt and per-dollar figures): marked
    /// where that power is modelled ([`PlatformResult::power_modelled`]).
    #[serde(default)]
    pub from_power: bool,
}

/// The whole evaluated plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TcoResult {
    pub title: String,
    pub currency: String,
    pub years: f64,
    pub energy_price_per_kwh: f64,
    pub pue: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infra_cost_per_w: Option<f64>,
    pub infra_basis: InfraBasis,
    pub rack_power_budget_w: f64,
    pub rack_reserved_w: f64,
    pub rack_units: u32,
    pub perf_unit: String,
    /// Index of the platform the ratios divide by.
    pub baseline: usize,
    pub platforms: Vec<PlatformResult>,
    pub rows: Vec<Row>,
    /// Notes a reader needs (modelled power, extrapolation).
    pub notes: Vec<String>,
}

impl TcoResult {
    /// Server power available in the rack.
    pub fn usable_w(&self) -> f64 {
        self.rack_power_budget_w - self.rack_reserved_w
    }
    /// The stored runs (ids) any platform's figures were taken from, each once, in
    /// platform order.
    pub fn runs(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for r in self.platforms.iter().flat_map(|p| &p.runs) {
            if !out.contains(&r.as_str()) {
                out.push(r);
            }
        }
        out
    }
    /// `3yr`, `2.5yr`.
    pub fn years_label(&self) -> String {
        if (self.years - self.years.round()).abs() < 1e-9 {
            format!("{}yr", self.years.round() as i64)
        } else {
            format!("{}yr", self.years)
        }
    }
}

fn geomean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| !positive(*v)) {
        return None;
    }
    Some((values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp())
}

fn positive(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (b != 0.0 && a.is_finite() && b.is_finite()).then(|| a / b)
}

/// Refuse platform `name`'s geometric mean over the tests `rows` where it is not over
/// those of the first platform's (`first`, set here when it is the first).
fn check_tests<'a>(
    first: &mut Option<(&'a str, &'a [String])>,
    name: &'a str,
    rows: &'a [String],
) -> anyhow::Result<()> {
    match first {
        Some((other, theirs)) if *theirs != rows => anyhow::bail!(
            "platform `{name}`'s performance is the geometric mean of {}, platform \
             `{other}`'s of {}: their difference would compare unlike figures; take each \
             over the same tests (`tests = [...]`, with `params` for a setting one run \
             swept), or give `perf = ...` in the plan",
            rows.join(", "),
            theirs.join(", ")
        ),
        Some(_) => {}
        None => *first = Some((name, rows)),
    }
    Ok(())
}

/// Refuse platform `name`'s performance unit `unit` (from a run) where it is not the
/// plan's `perf_unit`, or not the unit of the first platform's figure from a run
/// (`first`, set here when it is the first).
fn check_unit<'a>(
    plan: &Plan,
    first: &mut Option<(&'a str, String)>,
    name: &'a str,
    unit: &str,
) -> anyhow::Result<()> {
    if let Some(want) = plan.perf_unit.as_deref().filter(|w| *w != unit) {
        anyhow::bail!(
            "platform `{name}`: its run's performance is in {unit}, the plan's perf_unit is \
             {want:?}: set perf_unit = {unit:?} (or leave it out: the runs' unit is used), \
             or take the platform's figure from a test in {want}"
        );
    }
    match first {
        Some((other, u)) if u != unit => anyhow::bail!(
            "platform `{name}`: its run's performance is in {unit}, platform `{other}`'s in \
             {u}: a TCO compares one figure across its platforms; take each from the same \
             workload's tests (`test = ...`), or give `perf = ...` in the plan"
        ),
        Some(_) => {}
        None => *first = Some((name, unit.to_string())),
    }
    Ok(())
}

/// Below this a board's power is said to be suspect (given in the plan: a kW figure typed
/// as W; from a run: a meter or model reading far low, which sizes a rack by its space
/// and makes perf/W that much too high); a small Arm board draws a few watts, so it is
/// said, not refused.
const LEAST_BOARD_W: f64 = 5.0;

/// Evaluate a plan. `from_runs` holds, per platform name, what was taken from its `run`
/// (the CLI fills it); figures given in the plan win over figures from a run.
///
/// A performance figure taken from a run must be in the unit of every other taken from a
/// run, and in the plan's `perf_unit` where it gives one: an error says which differ.
pub fn evaluate(plan: &Plan, from_runs: &BTreeMap<String, FromRun>) -> anyhow::Result<TcoResult> {
    plan.check()?;
    let usable_w = plan.rack.power_budget_w - plan.rack.reserved_w;
    let hours = plan.years * HOURS_PER_YEAR;
    let mut notes = Vec::new();
    let mut platforms = Vec::new();
    let empty = FromRun::default();
    let mut perf_unit = plan.perf_unit.clone();
    // The first platform whose performance came from a run, and that figure's unit: every
    // other run's must be in the same, and the plan's `perf_unit` too (NOPM set against
    // RSA signs per second, both labelled "ops/s", compared nothing).
    let mut unit_of: Option<(&str, String)> = None;
    // A platform whose performance the plan gives: in no unit but the plan's perf_unit,
    // so set beside a run's figure only when the plan says that unit (900 typed beside a
    // run's MB/s was read as MB/s).
    let mut typed: Option<&str> = None;
    // The first platform whose performance is a geometric mean over its run's tests, and
    // those tests: every other such mean is over the same (a mean over `get` at pipeline
    // 1 and 100 beside one over `get` at pipeline 1 read the second at 0.35x of the first
    // where it was 1.1x).
    let mut mean_of: Option<(&str, &[String])> = None;
    // The declared power models of the platforms whose power is modelled, with them.
    let mut models: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for p in &plan.platforms {
        let fr = from_runs.get(&p.name).unwrap_or(&empty);
        let run_hint = |what: &str| -> String {
            let mut s = format!(
                "platform `{}`: no {what}: give it in the plan (`{}`)",
                p.name,
                if what == "power" {
                    "power_w = <watts per board>"
                } else {
                    "perf = <figure per board>"
                }
            );
            if let Some(r) = &p.run {
                s.push_str(&format!(" or fix run `{r}`"));
            }
            if !fr.problems.is_empty() {
                s.push_str(&format!(" ({})", fr.problems.join("; ")));
            }
            s
        };
        // The runs the figures below are taken from (none for a figure the plan gives).
        let mut runs: Vec<String> = Vec::new();
        let mut took = |s: &Sourced| {
            if let Some(r) = &s.run {
                if !runs.contains(r) {
                    runs.push(r.clone());
                }
            }
        };
        let (board_w, power_source, power_modelled) = match (p.power_w, &fr.power_w) {
            (Some(w), _) => {
                if w < LEAST_BOARD_W {
                    notes.push(format!(
                        "{}: power_w = {w} W per board, less than a server board draws: \
                         power_w is in watts (0.374 kW is 374)",
                        p.name
                    ));
                }
                (w, "given in the plan".to_string(), false)
            }
            (None, Some(s)) => {
                took(s);
                if s.value < LEAST_BOARD_W {
                    notes.push(format!(
                        "{}: its run's power is {:.2} W per board, less than a server board \
                         draws: check the source it was read from ({})",
                        p.name, s.value, s.source
                    ));
                }
                // A run that did not keep its model (stored before runs kept it) is on
                // one unknown: no note either way.
                if let Some(m) = s.model.as_ref().filter(|_| s.modelled) {
                    models.entry(format!("{m} W")).or_default().push(&p.name);
                }
                (s.value, s.source.clone(), s.modelled)
            }
            (None, None) => anyhow::bail!(run_hint("power")),
        };
        if p.perf.is_some() || !p.perf_tests.is_empty() {
            typed.get_or_insert(&p.name);
        }
        let (board_perf, perf_source) = if let Some(v) = p.perf {
            (v, "given in the plan".to_string())
        } else if !p.perf_tests.is_empty() {
            let vals: Vec<f64> = p.perf_tests.iter().map(|t| t.value).collect();
            let g = geomean(&vals).ok_or_else(|| {
                anyhow::anyhow!("platform `{}`: perf_tests must be positive", p.name)
            })?;
            let names: Vec<&str> = p.perf_tests.iter().map(|t| t.name.as_str()).collect();
            (
                g,
                format!(
                    "geometric mean of {} given tests ({})",
                    vals.len(),
                    names.join(", ")
                ),
            )
        } else if let Some(s) = &fr.perf {
            if let Some(u) = &s.unit {
                check_unit(plan, &mut unit_of, &p.name, u)?;
            }
            if !fr.perf_rows.is_empty() {
                check_tests(&mut mean_of, &p.name, &fr.perf_rows)?;
            }
            if perf_unit.is_none() {
                perf_unit = s.unit.clone();
            }
            took(s);
            (s.value, s.source.clone())
        } else {
            anyhow::bail!(run_hint("performance"))
        };
        if !positive(board_w) || !positive(board_perf) {
            anyhow::bail!(
                "platform `{}`: power ({board_w} W) and performance ({board_perf}) must be positive",
                p.name
            );
        }
        let k = p.boards_per_server;
        let server_w = board_w * k;
        let server_perf = board_perf * k;
        if k != 1.0 {
            notes.push(format!(
                "{}: performance, power and per-board parts extrapolated linearly to {} boards per server",
                p.name, k
            ));
        }
        if power_modelled {
            notes.push(format!(
                "{}: power is MODELLED (declared power model), not measured; energy, infrastructure, the total, perf/$ and perf/W derived from it are modelled too (and every rack figure where power limits the servers per rack), each cell marked {MODELLED_MARK}",
                p.name
            ));
        }
        // 100 servers of 110.1 W fill 11,010 W, but the quotient reads 99.99999999999999.
        let fit = usable_w / server_w * (1.0 + 1e-12);
        let power_limited = fit.floor().min(u32::MAX as f64) as u32;
        let space_limited = plan.rack.rack_units / p.height_u;
        let servers = power_limited.min(space_limited);
        let binding = match power_limited.cmp(&space_limited) {
            std::cmp::Ordering::Less => Binding::Power,
            std::cmp::Ordering::Greater => Binding::Space,
            std::cmp::Ordering::Equal => Binding::Both,
        };
        if servers == 0 {
            anyhow::bail!(
                "platform `{}`: not one server fits the rack ({server_w:.0} W per server against {usable_w:.0} W usable; {} U against {} U)",
                p.name,
                p.height_u,
                plan.rack.rack_units
            );
        }
        let warnings = if runs.is_empty() {
            Vec::new()
        } else {
            fr.warnings.clone()
        };
        let n = servers as f64;
        let capex: Vec<CostLine> = p
            .bom
            .as_ref()
            .map_or(&[][..], |b| b.items())
            .iter()
            .map(|b| {
                let per_server = b.unit_cost * b.quantity * if b.per_board { k } else { 1.0 };
                CostLine {
                    name: b.name.clone(),
                    per_server,
                    per_rack: per_server * n,
                }
            })
            .collect();
        // Folded from +0.0: an empty sum of f64 is -0.0, which `bom = 0` printed in JSON.
        let capex_per_server = capex.iter().fold(0.0, |sum, c| sum + c.per_server);
        if p.bom == Some(crate::plan::Bom::Zero) {
            notes.push(format!(
                "{}: no capex counted (`bom = 0` in the plan)",
                p.name
            ));
        }
        let infra = plan.infra_cost_per_w.map(|rate| {
            let provisioned = match plan.infra_basis {
                InfraBasis::It => server_w,
                InfraBasis::Facility => server_w * plan.pue,
            };
            let per_server = provisioned * rate;
            CostLine {
                name: format!("Infra Power Cost ({}yr)", fmt_years(plan.years)),
                per_server,
                per_rack: per_server * n,
            }
        });
        let kwh = server_w / 1000.0 * hours * plan.pue;
        let energy_cost = kwh * plan.energy_price_per_kwh;
        let energy = CostLine {
            name: format!("Power ({}yr)", fmt_years(plan.years)),
            per_server: energy_cost,
            per_rack: energy_cost * n,
        };
        let total = capex_per_server + infra.as_ref().map_or(0.0, |c| c.per_server) + energy_cost;
        platforms.push(PlatformResult {
            name: p.name.clone(),
            note: p.note.clone(),
            boards_per_server: k,
            height_u: p.height_u,
            server_power_w: server_w,
            power_source,
            power_modelled,
            perf_per_server: server_perf,
            perf_source,
            runs,
            warnings,
            power_limited_servers: power_limited,
            space_limited_servers: space_limited,
            servers_per_rack: servers,
            binding,
            rack_power_w: server_w * n,
            capex,
            capex_per_server,
            capex_per_rack: capex_per_server * n,
            infra,
            energy,
            energy_kwh_per_server: kwh,
            total_per_server: total,
            total_per_rack: total * n,
            perf_per_rack: server_perf * n,
            perf_per_dollar: if total > 0.0 {
                server_perf / total
            } else {
                f64::NAN
            },
            perf_per_w: server_perf / server_w,
            missing: if total > 0.0 {
                BTreeMap::new()
            } else {
                BTreeMap::from([(
                    "perf_per_dollar".to_string(),
                    format!("total cost is {}0", plan.currency),
                )])
            },
        });
    }
    if let (Some(typed), Some((from_run, unit)), None) = (typed, &unit_of, &plan.perf_unit) {
        anyhow::bail!(
            "platform `{typed}`'s performance is given in the plan, platform `{from_run}`'s \
             taken from a run in {unit}: say the unit of the figures given, perf_unit = \
             {unit:?} if they are in it"
        );
    }
    // A measured power set against a modelled one: every difference from power is the
    // model's (`compare` calls such runs not comparable; a plan may still want the TCO).
    let (modelled, measured): (Vec<&PlatformResult>, Vec<&PlatformResult>) =
        platforms.iter().partition(|p| p.power_modelled);
    if !modelled.is_empty() && !measured.is_empty() {
        let names = |ps: &[&PlatformResult]| {
            ps.iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        notes.push(format!(
            "power is not like for like: {} MODELLED, {} measured or given; every difference \
             derived from power (energy, infrastructure, the total, perf/$, perf/W, and the \
             rack where power binds) sets a model against a measurement",
            names(&modelled),
            names(&measured)
        ));
    }
    // Two models: every difference from power is the models'.
    if models.len() > 1 {
        let each: Vec<String> = models
            .iter()
            .map(|(m, names)| format!("{m} for {}", names.join(", ")))
            .collect();
        notes.push(format!(
            "power is not like for like: the watts are of {} different power models ({}); \
             every difference derived from power (energy, infrastructure, the total, \
             perf/$, perf/W, and the rack where power binds) is the models'",
            models.len(),
            each.join("; ")
        ));
    }
    let baseline = match &plan.baseline {
        Some(b) => plan
            .platforms
            .iter()
            .position(|p| &p.name == b)
            .unwrap_or(0),
        // The first, as the report's summary has it: one report's two Difference
        // columns run the same way.
        None => 0,
    };
    let rows = build_rows(&platforms, baseline);
    Ok(TcoResult {
        title: plan.title.clone().unwrap_or_else(|| "Rack TCO".to_string()),
        currency: plan.currency.clone(),
        years: plan.years,
        energy_price_per_kwh: plan.energy_price_per_kwh,
        pue: plan.pue,
        infra_cost_per_w: plan.infra_cost_per_w,
        infra_basis: plan.infra_basis,
        rack_power_budget_w: plan.rack.power_budget_w,
        rack_reserved_w: plan.rack.reserved_w,
        rack_units: plan.rack.rack_units,
        perf_unit: perf_unit.unwrap_or_default(),
        baseline,
        platforms,
        rows,
        notes,
    })
}

fn fmt_years(y: f64) -> String {
    if (y - y.round()).abs() < 1e-9 {
        format!("{}", y.round() as i64)
    } else {
        format!("{y}")
    }
}

/// The table rows in the seed's order: capex lines, infrastructure, energy, total,
/// performance, then what the seed states in prose (servers, power, perf/$, perf/W).
fn build_rows(ps: &[PlatformResult], baseline: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut push =
        |section: &str, label: &str, kind: &str, from_power: bool, s: Vec<f64>, r: Vec<f64>| {
            let server_ratio = s.iter().map(|v| ratio(*v, s[baseline])).collect();
            let rack_ratio = r.iter().map(|v| ratio(*v, r[baseline])).collect();
            rows.push(Row {
                section: section.to_string(),
                label: label.to_string(),
                kind: kind.to_string(),
                per_server: s,
                per_rack: r,
                server_ratio,
                rack_ratio,
                from_power,
            });
        };
    // BOM lines: the union of item names, in first-seen order; an item a platform lacks is 0.
    let mut names: Vec<&str> = Vec::new();
    for p in ps {
        for c in &p.capex {
            if !names.contains(&c.name.as_str()) {
                names.push(&c.name);
            }
        }
    }
    let line = |p: &PlatformResult, name: &str| -> (f64, f64) {
        p.capex
            .iter()
            .filter(|c| c.name == name)
            .fold((0.0, 0.0), |a, c| (a.0 + c.per_server, a.1 + c.per_rack))
    };
    for name in names {
        let (s, r): (Vec<f64>, Vec<f64>) = ps.iter().map(|p| line(p, name)).unzip();
        push("Capex", name, "money", false, s, r);
    }
    if let Some(label) = ps
        .iter()
        .find_map(|p| p.infra.as_ref().map(|c| c.name.clone()))
    {
        let (s, r): (Vec<f64>, Vec<f64>) = ps
            .iter()
            .map(|p| {
                p.infra
                    .as_ref()
                    .map_or((0.0, 0.0), |c| (c.per_server, c.per_rack))
            })
            .unzip();
        push("Capex", &label, "money", true, s, r);
    }
    let label = ps[0].energy.name.clone();
    push(
        "Opex",
        &label,
        "money",
        true,
        ps.iter().map(|p| p.energy.per_server).collect(),
        ps.iter().map(|p| p.energy.per_rack).collect(),
    );
    push(
        "",
        "Total",
        "money",
        true,
        ps.iter().map(|p| p.total_per_server).collect(),
        ps.iter().map(|p| p.total_per_rack).collect(),
    );
    push(
        "",
        "Performance",
        "perf",
        false,
        ps.iter().map(|p| p.perf_per_server).collect(),
        ps.iter().map(|p| p.perf_per_rack).collect(),
    );
    push(
        "",
        "Servers",
        "count",
        false,
        ps.iter().map(|_| 1.0).collect(),
        ps.iter().map(|p| p.servers_per_rack as f64).collect(),
    );
    push(
        "",
        "Power (W)",
        "watts",
        true,
        ps.iter().map(|p| p.server_power_w).collect(),
        ps.iter().map(|p| p.rack_power_w).collect(),
    );
    push(
        "",
        "Perf per $",
        "perf_per_money",
        true,
        ps.iter().map(|p| p.perf_per_dollar).collect(),
        ps.iter().map(|p| p.perf_per_dollar).collect(),
    );
    push(
        "",
        "Perf per W",
        "perf_per_w",
        true,
        ps.iter().map(|p| p.perf_per_w).collect(),
        ps.iter().map(|p| p.perf_per_w).collect(),
    );
    rows
}

/// Geometric mean of positive figures (None when empty or any figure is not positive).
pub fn geometric_mean(values: &[f64]) -> Option<f64> {
    geomean(values)
}
