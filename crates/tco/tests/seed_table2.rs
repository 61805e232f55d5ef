//! Regression: the Redis TCO study (seeds/000) Table 2, reproduced from its published
//! inputs in `examples/seed_redis_tco.toml`.

use std::collections::BTreeMap;

use rackbench_tco as tco;

fn seed_result() -> tco::TcoResult {
    let text = include_str!("../examples/seed_redis_tco.toml");
    let plan = tco::Plan::from_toml(text).expect("example plan parses");
    tco::evaluate(&plan, &BTreeMap::new()).expect("example plan evaluates")
}

/// (label, per-server Centriq, per-server Intel, server Difference,
///  per-rack Centriq, per-rack Intel, rack Difference), exactly as published.
const TABLE2: &[(&str, f64, f64, &str, f64, f64, &str)] = &[
    (
        "Processor(s)",
        2746.0,
        3110.0,
        "0.9x",
        98856.0,
        90190.0,
        "1.1x",
    ),
    ("Memory", 4224.0, 1787.0, "2.4x", 152064.0, 51825.0, "2.9x"),
    (
        "Motherboard",
        935.0,
        820.0,
        "1.1x",
        33660.0,
        23780.0,
        "1.4x",
    ),
    ("Storage", 154.0, 77.0, "2.0x", 5530.0, 2227.0, "2.5x"),
    ("NIC", 360.0, 180.0, "2.0x", 12960.0, 5220.0, "2.5x"),
    (
        "Rest of Server",
        290.0,
        290.0,
        "1.0x",
        10440.0,
        8410.0,
        "1.2x",
    ),
    (
        "Infra Power Cost (3yr)",
        994.0,
        1301.0,
        "0.8x",
        35786.0,
        37716.0,
        "0.9x",
    ),
    (
        "Power (3yr)",
        630.0,
        825.0,
        "0.8x",
        22697.0,
        23921.0,
        "0.9x",
    ),
    ("Total", 10333.0, 8389.0, "1.2x", 371993.0, 243289.0, "1.5x"),
    (
        "Performance",
        14513419.0,
        8307339.0,
        "1.7x",
        522483069.0,
        240912828.0,
        "2.2x",
    ),
];

/// The energy's assumption is said with the prices: each server at its benchmark power
/// around the clock, provisioned at it (a planner read the energy line as a duty cycle's).
#[test]
fn the_footnotes_say_the_power_is_drawn_around_the_clock() {
    let notes = tco::footnotes(&seed_result()).join("\n");
    assert!(
        notes.contains("around the clock, no idle hours, and provisioned for that power"),
        "{notes}"
    );
}

#[test]
fn servers_per_rack_36_vs_29_and_what_binds() {
    let t = seed_result();
    let (q, i) = (&t.platforms[0], &t.platforms[1]);
    assert_eq!(q.servers_per_rack, 36);
    assert_eq!(i.servers_per_rack, 29);
    // "38 two motherboard ... 1U servers fit within an 11kW power budget ... but only 36
    // 1U servers fit in a typical 42U rack"
    assert_eq!(q.power_limited_servers, 38);
    assert_eq!(q.binding, tco::Binding::Space);
    assert_eq!(i.binding, tco::Binding::Power);
    assert_eq!(t.baseline, 1);
}

#[test]
fn reproduces_table2_within_rounding() {
    let t = seed_result();
    for (label, sq, si, sd, rq, ri, rd) in TABLE2 {
        let row = t
            .rows
            .iter()
            .find(|r| r.label == *label)
            .unwrap_or_else(|| panic!("row {label} missing"));
        // Published cells are rounded to the unit; rack cells to the unit as well.
        assert!(
            (row.per_server[0] - sq).abs() <= 0.5 + 1e-6,
            "{label} Centriq server {} vs {sq}",
            row.per_server[0]
        );
        assert!(
            (row.per_server[1] - si).abs() <= 0.5 + 1e-6,
            "{label} Intel server {} vs {si}",
            row.per_server[1]
        );
        assert!(
            (row.per_rack[0] - rq).abs() <= 0.5 + 1e-6,
            "{label} Centriq rack {} vs {rq}",
            row.per_rack[0]
        );
        assert!(
            (row.per_rack[1] - ri).abs() <= 0.5 + 1e-6,
            "{label} Intel rack {} vs {ri}",
            row.per_rack[1]
        );
        assert_eq!(
            tco::fmt_ratio(row.server_ratio[0]),
            *sd,
            "{label} server Difference"
        );
        assert_eq!(
            tco::fmt_ratio(row.rack_ratio[0]),
            *rd,
            "{label} rack Difference"
        );
        assert_eq!(tco::fmt_ratio(row.server_ratio[1]), "1.0x");
    }
}

#[test]
fn prose_claims_hold() {
    let t = seed_result();
    let (q, i) = (&t.platforms[0], &t.platforms[1]);
    // "1.4x performance per dollar advantage", "0.9x the power consumption", "1.5x the price"
    assert_eq!(
        tco::fmt_ratio(Some(q.perf_per_dollar / i.perf_per_dollar)),
        "1.4x"
    );
    assert_eq!(
        tco::fmt_ratio(Some(q.rack_power_w / i.rack_power_w)),
        "0.9x"
    );
    assert_eq!(
        tco::fmt_ratio(Some(q.total_per_rack / i.total_per_rack)),
        "1.5x"
    );
    assert!(q.rack_power_w <= 11_000.0 && i.rack_power_w <= 11_000.0);
}

#[test]
fn table_text_has_difference_columns() {
    let t = seed_result();
    let s = tco::text(&t);
    println!("{s}");
    assert!(s.contains("Difference"));
    assert!(s.contains("36 x Qualcomm Centriq 2452"));
    assert!(s.contains("29 x Intel Xeon Gold 5120"));
    assert!(s.contains("$371,993"));
    assert!(s.contains("$243,289"));
    assert!(s.contains("space binds"));
    let md = tco::markdown(&t);
    assert!(
        md.contains("| Capex | Processor(s) | $2,746 | $3,110 | 0.88x (-12%) |"),
        "{md}"
    );
}

/// The Markdown is inert whatever a plan names (the report embeds it): a platform named
/// as a link was a live link, its `*` emphasis.
#[test]
fn markdown_makes_no_link_of_a_name() {
    let mut t = seed_result();
    t.title = "[x](https://e.example) *bold*".into();
    t.platforms[0].name = "[y](javascript:alert(1)) www.e.example".into();
    let md = tco::markdown(&t);
    assert!(
        !md.contains("[x](") && !md.contains("[y](") && !md.contains("://"),
        "{md}"
    );
    assert!(!md.contains(" *bold*") && !md.contains("www.e"), "{md}");
    assert!(md.contains("\\[x\\](https&#58;//e.example)"), "{md}");
}

#[test]
fn json_round_trips() {
    let t = seed_result();
    let j = serde_json::to_string(&t).unwrap();
    let back: tco::TcoResult = serde_json::from_str(&j).unwrap();
    assert_eq!(back.platforms[0].servers_per_rack, 36);
}

/// Figures keep three significant digits however small (a Gbit/s per $ of 0.000333 is
/// not 0.000), and large ones their thousands separators.
#[test]
fn small_figures_keep_three_significant_digits() {
    let cases = [
        (0.000333, "0.000333"),
        (-0.000333, "-0.000333"),
        (0.0025, "0.00250"),
        (0.00099996, "0.00100"),
        (0.5, "0.500"),
        (1.5, "1.50"),
        (12.34, "12.3"),
        (123.4, "123"),
        (12345.6, "12,346"),
        (0.0, "0"),
    ];
    for (v, want) in cases {
        assert_eq!(tco::fmt_number(v), want, "{v}");
    }
}

/// The Difference header says which way its ratio runs; a plan that names no baseline
/// divides by its first platform, as the report's summary does; a ratio below 0.1 keeps
/// two significant digits (0.058 and 0.14 are not both `0.1x`).
#[test]
fn difference_names_its_direction_and_small_ratios_stay_apart() {
    let t = seed_result();
    let s = tco::text(&t);
    assert!(
        s.contains("Difference (Qualcomm Centriq 2452 / Intel Xeon Gold 5120)"),
        "{s}"
    );
    let text = include_str!("../examples/seed_redis_tco.toml")
        .replace("baseline = \"Intel Xeon Gold 5120\"", "");
    let plan = tco::Plan::from_toml(&text).unwrap();
    let t = tco::evaluate(&plan, &BTreeMap::new()).unwrap();
    assert_eq!(t.platforms[t.baseline].name, "Qualcomm Centriq 2452");
    assert_eq!(tco::fmt_ratio(Some(0.058)), "0.058x");
    assert_eq!(tco::fmt_ratio(Some(0.14)), "0.1x");
    assert_eq!(tco::fmt_ratio(Some(0.08)), "0.080x");
    assert_eq!(tco::fmt_ratio(Some(1.66)), "1.7x");
}

/// A plan's mistakes are named by their keys, once each: no `platform `X`: power_w`
/// nested in backticks, and a plan without platforms is told what one needs.
#[test]
fn plan_errors_name_their_keys_plainly() {
    let seed = include_str!("../examples/seed_redis_tco.toml");
    let bad = seed.replacen("power_w = ", "power_w = -", 1);
    let e = tco::Plan::from_toml(&bad).unwrap_err().to_string();
    assert!(e.contains(": `power_w` must be a positive number"), "{e}");
    assert!(!e.contains("`platform `"), "{e}");
    let cut = seed
        .find("[[platform]]")
        .expect("the seed plan has platforms");
    let e = tco::Plan::from_toml(&seed[..cut]).unwrap_err().to_string();
    assert!(e.contains("add at least one [[platform]]"), "{e}");
}

/// Each Difference cell has the percentage beside its ratio, the same way round (A / B:
/// 0.88x is -12%), in whole percent as the report's summary states differences; an
/// absent ratio stays absent and says why, with no percentage.
#[test]
fn difference_cells_carry_the_percentage_beside_the_ratio() {
    let t = seed_result();
    let (_, head, body) = tco::cells(&t);
    let diffs: Vec<usize> = head
        .iter()
        .enumerate()
        .filter(|(_, h)| h.starts_with("Difference ("))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(diffs.len(), 2, "{head:?}");
    let row = |label: &str| {
        let i = t.rows.iter().position(|r| r.label == label).unwrap();
        (&t.rows[i], &body[i])
    };
    // Published: Processor(s) 0.9x and 1.1x; Performance 1.7x and 2.2x. Beside the
    // percent the ratio has two decimals, which round to the published one.
    let (r, cells) = row("Processor(s)");
    assert_eq!(cells[diffs[0]], "0.88x (-12%)");
    assert_eq!(tco::fmt_ratio(r.server_ratio[0]), "0.9x");
    let rack = r.rack_ratio[0].unwrap();
    assert_eq!(tco::fmt_ratio(Some(rack)), "1.1x");
    let rack_pct = ((rack - 1.0) * 100.0).round();
    assert_eq!(cells[diffs[1]], format!("{rack:.2}x (+{rack_pct:.0}%)"));
    let (r, cells) = row("Performance");
    assert!(cells[diffs[0]].starts_with("1.7") && cells[diffs[0]].contains("x (+7"));
    assert_eq!(tco::fmt_ratio(r.server_ratio[0]), "1.7x");
    assert_eq!(tco::fmt_ratio(r.rack_ratio[0]), "2.2x");
    assert!(cells[diffs[1]].contains("x (+11"), "{}", cells[diffs[1]]);
    for (r, cells) in t.rows.iter().zip(&body) {
        for (d, ratio) in diffs.iter().zip([r.server_ratio[0], r.rack_ratio[0]]) {
            let v = ratio.unwrap();
            let ratio = if (0.095..10.0).contains(&v.abs()) {
                format!("{v:.2}x")
            } else {
                tco::fmt_ratio(Some(v))
            };
            assert_eq!(
                cells[*d],
                format!("{ratio} ({})", tco::fmt_pct_change(v)),
                "{}",
                r.label
            );
        }
    }
    // In every format.
    assert!(tco::text(&t).contains("0.88x (-12%)"));
    assert!(tco::markdown(&t).contains("| 0.88x (-12%) |"));
    // No change is +0%, never -0%; a change under half a percent keeps its sign and a
    // decimal; a tenth is -90%.
    assert_eq!(tco::fmt_pct_change(1.0), "+0%");
    assert_eq!(tco::fmt_pct_change(0.9999), "+0%");
    assert_eq!(tco::fmt_pct_change(0.9962), "-0.4%");
    assert_eq!(tco::fmt_pct_change(0.998), "-0.2%");
    assert_eq!(tco::fmt_pct_change(1.004), "+0.4%");
    assert_eq!(tco::fmt_pct_change(1.006), "+1%");
    assert_eq!(tco::fmt_pct_change(0.1), "-90%");
    assert_eq!(tco::fmt_pct_change(2.2), "+120%");
    // A part only the other platform has: the baseline's figure is 0, no ratio.
    let text = include_str!("../examples/seed_redis_tco.toml").replacen(
        "{ name = \"Rest of Server\", unit_cost = 290 },",
        "{ name = \"Rest of Server\", unit_cost = 290 },\n  { name = \"Accelerator\", unit_cost = 500 },",
        1,
    );
    let plan = tco::Plan::from_toml(&text).unwrap();
    let t = tco::evaluate(&plan, &BTreeMap::new()).unwrap();
    let (_, head, body) = tco::cells(&t);
    let i = t
        .rows
        .iter()
        .position(|r| r.label == "Accelerator")
        .unwrap();
    let d = head
        .iter()
        .position(|h| h.starts_with("Difference ("))
        .unwrap();
    assert_eq!(body[i][d], "n/a (baseline is 0)");
    assert!(!body[i][d].contains('%'));
}

/// Acceptance pass B, 10: cells derived from modelled power carried no mark (`143 W`,
/// `Perf per W 620`, `Power (3yr) $562`); only a note under the table said MODELLED.
/// Every such cell is marked now, in the platform's columns and in the Difference
/// columns that divide by it; a figure that owes nothing to power (a BOM line, the
/// performance per server) is not. Here `mod`'s rack is limited by power, so its rack
/// figures all come from the modelled watts.
#[test]
fn cells_derived_from_modelled_power_are_marked() {
    let plan = tco::Plan::from_toml(
        r#"years = 3
energy_price_per_kwh = 0.10
[rack]
power_budget_w = 2000
rack_units = 40
[[platform]]
name = "meas"
perf = 1000
power_w = 100
bom = [{ name = "Server", unit_cost = 5000 }]
[[platform]]
name = "mod"
run = "r1"
perf = 2000
bom = [{ name = "Server", unit_cost = 6000 }]
"#,
    )
    .unwrap();
    let fr: tco::FromRun = serde_json::from_value(serde_json::json!({
        "power_w": { "value": 143.0, "source": "run r1: MODELLED model system", "modelled": true },
        "perf": null,
    }))
    .unwrap();
    let t = tco::evaluate(&plan, &BTreeMap::from([("mod".to_string(), fr.clone())])).unwrap();
    let (_, head, body) = tco::cells(&t);
    let col = |h: &str| head.iter().position(|c| c == h).unwrap();
    let row = |label: &str| &body[t.rows.iter().position(|r| r.label == label).unwrap()];
    let (meas, modl, diff) = (col("meas"), col("mod"), col("Difference (mod / meas)"));
    let rack = |name: &str| {
        head.iter()
            .position(|c| c.ends_with(&format!(" x {name}")))
            .unwrap()
    };
    let (rack_mod, rack_meas) = (rack("mod"), rack("meas"));
    for label in ["Power (W)", "Perf per W", "Perf per $", "Total"] {
        let r = row(label);
        assert!(r[modl].ends_with(" (MODELLED)"), "{label}: {r:?}");
        assert!(r[diff].ends_with(" (MODELLED)"), "{label}: {r:?}");
        assert!(r[rack_mod].ends_with(" (MODELLED)"), "{label}: {r:?}");
        assert!(!r[meas].contains("MODELLED"), "{label}: {r:?}");
        assert!(!r[rack_meas].contains("MODELLED"), "{label}: {r:?}");
    }
    assert_eq!(row("Power (W)")[modl], "143 W (MODELLED)");
    // Per server, a BOM line and the performance owe nothing to power; per rack, the
    // count of servers (power binds) and so every rack figure do.
    for label in ["Server", "Performance", "Servers"] {
        let r = row(label);
        assert!(!r[modl].contains("MODELLED"), "{label}: {r:?}");
        assert!(r[rack_mod].ends_with(" (MODELLED)"), "{label}: {r:?}");
    }
    let text = tco::text(&t);
    assert!(text.contains("143 W (MODELLED)"), "{text}");
    assert!(tco::markdown(&t).contains("143 W (MODELLED)"));
    // A model set against a measurement is said once, naming which is which.
    let said = "power is not like for like: mod MODELLED, meas measured or given";
    assert!(t.notes.iter().any(|n| n.starts_with(said)), "{:?}", t.notes);
    // Both measured: nothing to say.
    let mut fr = fr;
    fr.power_w.as_mut().unwrap().modelled = false;
    let t = tco::evaluate(&plan, &BTreeMap::from([("mod".to_string(), fr)])).unwrap();
    assert!(
        !t.notes.iter().any(|n| n.contains("not like for like")),
        "{:?}",
        t.notes
    );
}

/// Two platforms each on a declared power model, two models: every difference from power
/// is the models' (each footnote named its own, and nothing said they differ).
#[test]
fn two_power_models_are_not_like_for_like() {
    let plan = tco::Plan::from_toml(
        r#"years = 3
energy_price_per_kwh = 0.10
[rack]
power_budget_w = 2000
rack_units = 40
[[platform]]
name = "a"
run = "r1"
perf = 1000
bom = [{ name = "Server", unit_cost = 5000 }]
[[platform]]
name = "b"
run = "r2"
perf = 2000
bom = [{ name = "Server", unit_cost = 6000 }]
"#,
    )
    .unwrap();
    let modelled = |run: &str, m: &str, w: f64| -> tco::FromRun {
        serde_json::from_value(serde_json::json!({
            "power_w": { "value": w, "source": format!("run {run}: MODELLED model system ({m} W)"),
                         "modelled": true, "model": m, "run": run },
            "perf": null,
        }))
        .unwrap()
    };
    let notes = |b: tco::FromRun| {
        let runs = BTreeMap::from([
            ("a".to_string(), modelled("r1", "60:160", 143.0)),
            ("b".to_string(), b),
        ]);
        tco::evaluate(&plan, &runs).unwrap().notes
    };
    let two = notes(modelled("r2", "50:200", 180.0));
    let said = "power is not like for like: the watts are of 2 different power models \
                (50:200 W for b; 60:160 W for a)";
    assert!(two.iter().any(|n| n.starts_with(said)), "{two:?}");
    // One model on both runs: like for like, nothing to say.
    let one = notes(modelled("r2", "60:160", 180.0));
    assert!(
        !one.iter().any(|n| n.contains("not like for like")),
        "{one:?}"
    );
}

/// Acceptance pass K, 5: a platform with no bill of materials was taken as $0 capex,
/// silently, and published a 12x perf/$ advantage from a forgotten input. It is refused
/// now, saying what to write; `bom = 0` counts no capex on purpose, with a note; a perf/$
/// of a $0 total says why it is absent; one year is "1 year", a tie "power and space bind".
#[test]
fn a_platform_without_a_bill_of_materials_is_refused() {
    let plan = |free_bom: &str, price: &str| {
        format!(
            "years = 1\nenergy_price_per_kwh = {price}\n[rack]\npower_budget_w = 1000\n\
             rack_units = 10\n[[platform]]\nname = \"free\"\npower_w = 100\nperf = 1000\n\
             {free_bom}\n[[platform]]\nname = \"paid\"\npower_w = 100\nperf = 1000\n\
             bom = [ {{ name = \"Server\", unit_cost = 1000 }} ]\n"
        )
    };
    let e = tco::Plan::from_toml(&plan("", "0.1"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("platform `free` has no bill of materials"),
        "{e}"
    );
    assert!(e.contains("`bom = 0` to count no capex on purpose"), "{e}");
    let e = tco::Plan::from_toml(&plan("bom = []", "0.1"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("`bom = []` lists no item"), "{e}");
    let e = tco::Plan::from_toml(&plan("bom = 5", "0.1"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("or 0 to count no capex on purpose"), "{e}");
    // On purpose: counted as no capex, and said under the table.
    let p = tco::Plan::from_toml(&plan("bom = 0", "0.1")).unwrap();
    let t = tco::evaluate(&p, &BTreeMap::new()).unwrap();
    let notes = tco::footnotes(&t).join("\n");
    assert!(
        notes.contains("free: no capex counted (`bom = 0` in the plan)"),
        "{notes}"
    );
    assert!(notes.contains("x PUE 1 over 1 year"), "{notes}");
    assert!(!notes.contains("1 years"), "{notes}");
    // No capex is 0, not -0.0 (an empty f64 sum) in JSON, and its Difference is 0x.
    let json = serde_json::to_string(&t).unwrap();
    assert!(!json.contains("-0.0"), "{json}");
    assert_eq!(tco::fmt_difference(Some(0.0), 1000.0), "0x (-100%)");
    // 1,000 W / 100 W = 10 by power, 10 U / 1 U = 10 by space: they bind, together.
    assert!(
        notes.contains("10 servers per rack, power and space bind ("),
        "{notes}"
    );
    // A total of $0 (no capex, no energy price): perf/$ says why it is absent.
    let p = tco::Plan::from_toml(&plan("bom = 0", "0")).unwrap();
    let t = tco::evaluate(&p, &BTreeMap::new()).unwrap();
    let (_, head, body) = tco::cells(&t);
    let i = t.rows.iter().position(|r| r.label == "Perf per $").unwrap();
    assert_eq!(body[i][2], "n/a (total cost is $0)", "{head:?}");
    assert_eq!(body[i][4], "n/a (total cost of free is $0)", "{head:?}");
    assert!(!tco::text(&t).contains("not a number"));
    // And in JSON, its null has the reason beside it; a priced platform has none.
    let json = serde_json::to_value(&t).unwrap();
    let free = json["platforms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "free")
        .unwrap();
    assert!(free["perf_per_dollar"].is_null(), "{free}");
    assert_eq!(
        free["missing"]["perf_per_dollar"], "total cost is $0",
        "{free}"
    );
    let p = tco::Plan::from_toml(&plan("bom = 0", "0.1")).unwrap();
    let priced = serde_json::to_value(tco::evaluate(&p, &BTreeMap::new()).unwrap()).unwrap();
    assert!(priced["platforms"][0].get("missing").is_none(), "{priced}");
    // One limit alone binds.
    let space = plan("bom = 0", "0.1").replace("rack_units = 10", "rack_units = 20");
    let t = tco::evaluate(&tco::Plan::from_toml(&space).unwrap(), &BTreeMap::new()).unwrap();
    let notes = tco::footnotes(&t).join("\n");
    assert!(
        notes.contains("10 servers per rack, power binds ("),
        "{notes}"
    );
}

/// Performance taken from runs is one figure across the platforms: new orders per
/// minute set against RSA signs per second, both labelled "ops/s" by the plan, compared
/// nothing (acceptance pass, s27); such a plan is refused, saying which differ.
#[test]
fn platforms_whose_runs_measure_in_other_units_are_refused() {
    let plan = |unit: &str| {
        tco::Plan::from_toml(&format!(
            r#"years = 3
energy_price_per_kwh = 0.10
{unit}
[rack]
power_budget_w = 5000
rack_units = 42
[[platform]]
name = "db"
run = "r1"
power_w = 200
bom = [{{ name = "Server", unit_cost = 1000 }}]
[[platform]]
name = "rsa"
run = "r2"
power_w = 200
bom = [{{ name = "Server", unit_cost = 1000 }}]
"#
        ))
        .unwrap()
    };
    let perf = |v: f64, unit: &str| -> tco::FromRun {
        serde_json::from_value(serde_json::json!({
            "perf": { "value": v, "source": "run", "unit": unit },
        }))
        .unwrap()
    };
    let runs = |a: &str, b: &str| {
        BTreeMap::from([
            ("db".to_string(), perf(68151.0, a)),
            ("rsa".to_string(), perf(3585.0, b)),
        ])
    };
    let err = tco::evaluate(&plan(""), &runs("new orders/min", "sign/s"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "platform `rsa`: its run's performance is in sign/s, platform `db`'s in new orders/min"
        ),
        "{err}"
    );
    let err = tco::evaluate(
        &plan(r#"perf_unit = "ops/s""#),
        &runs("new orders/min", "new orders/min"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("platform `db`: its run's performance is in new orders/min, the plan's perf_unit is \"ops/s\""),
        "{err}"
    );
    // One unit throughout, given or not: evaluated, in that unit.
    let t = tco::evaluate(&plan(""), &runs("ops/s", "ops/s")).unwrap();
    assert_eq!(t.perf_unit, "ops/s");
    assert!(tco::evaluate(&plan(r#"perf_unit = "ops/s""#), &runs("ops/s", "ops/s")).is_ok());
}

/// A kW figure typed as watts (0.374) fitted 29,411 servers by power with nothing
/// said; a PUE of 120 was taken; and 100 servers of 110.1 W in 11,010 W read 99.
#[test]
fn implausible_plan_figures_are_said_and_an_exact_fit_fits() {
    let plan = |pue: &str, power_w: &str| {
        format!(
            "years = 3\nenergy_price_per_kwh = 0.1\npue = {pue}\n[rack]\n\
             power_budget_w = 12000\nreserved_w = 990\nrack_units = 420\n[[platform]]\n\
             name = \"A\"\npower_w = {power_w}\nboards_per_server = 3\nperf = 1000\n\
             bom = [ {{ name = \"Server\", unit_cost = 1000 }} ]\n"
        )
    };
    let e = tco::Plan::from_toml(&plan("120", "36.7"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`pue` is the facility's power over its IT power, 1.0 to 5"),
        "{e}"
    );
    let p = tco::Plan::from_toml(&plan("1.5", "36.7")).unwrap();
    let t = tco::evaluate(&p, &BTreeMap::new()).unwrap();
    assert_eq!(t.platforms[0].power_limited_servers, 100);
    assert!(tco::footnotes(&t).iter().all(|n| !n.contains("less than")));
    let p = tco::Plan::from_toml(&plan("1.5", "0.374")).unwrap();
    let t = tco::evaluate(&p, &BTreeMap::new()).unwrap();
    let notes = tco::footnotes(&t).join("\n");
    assert!(
        notes.contains("A: power_w = 0.374 W per board, less than a server board draws"),
        "{notes}"
    );
    // A run's reading as low is said too: it would size the rack by its space and make
    // perf/W that much too high, with nothing said.
    let from_run = plan("1.5", "0").replace("power_w = 0\n", "run = \"r1\"\n");
    let p = tco::Plan::from_toml(&from_run).unwrap();
    let read = |w: f64| -> BTreeMap<String, tco::FromRun> {
        let fr = serde_json::from_value(serde_json::json!({
            "power_w": { "value": w, "source": "run r1: ipmi-dcmi system" },
        }))
        .unwrap();
        BTreeMap::from([("A".to_string(), fr)])
    };
    let notes = tco::footnotes(&tco::evaluate(&p, &read(2.0)).unwrap()).join("\n");
    assert!(
        notes.contains(
            "A: its run's power is 2.00 W per board, less than a server board draws: check \
             the source it was read from (run r1: ipmi-dcmi system)"
        ),
        "{notes}"
    );
    let t = tco::evaluate(&p, &read(36.7)).unwrap();
    assert!(tco::footnotes(&t).iter().all(|n| !n.contains("less than")));
}
