//! Plan values: flags and TOML plans both become plain JSON maps; a value that is a list
//! (`1,100`) or a range (`1..4`, `1..16:x2`) is a sweep, and the cartesian product of all
//! sweeps gives the points the runner measures.

use std::collections::BTreeMap;

use anyhow::{bail, Context};
use serde_json::{Map, Number, Value};

/// Deserialize one sweep point into a workload's config type. Errors name the key and
/// say what it takes in the user's words (`clients: got string "many", expected a whole
/// number, not negative`), and where to look. The type's rule only: a knob's own floor
/// (`clients` at least 1) is its check's to say.
pub fn config_from_params<T: serde::de::DeserializeOwned>(
    workload: &str,
    params: &Map<String, Value>,
) -> anyhow::Result<T> {
    config_from_params_beside(workload, params, &[])
}

/// [`config_from_params`] for settings read beside others taken out first (`beside`: the
/// capacity tests' keys): an unknown key's message lists those too, not only this
/// config's own (a plan's `[kv]` typo was told the load test's keys alone).
pub fn config_from_params_beside<T: serde::de::DeserializeOwned>(
    workload: &str,
    params: &Map<String, Value>,
    beside: &[&str],
) -> anyhow::Result<T> {
    let v = Value::Object(params.clone());
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let mut inner = plain_words(&e.into_inner().to_string());
        if let Some(hint) = figure_hint(&path, &inner) {
            inner.push_str(&format!(": give {hint}"));
        }
        if inner.starts_with("unknown field") && !beside.is_empty() {
            let keys: Vec<String> = beside.iter().map(|k| format!("`{k}`")).collect();
            inner.push_str(&format!(", or one of {}", keys.join(", ")));
        }
        let help = format!("(see `rackbench run {workload} --help`)");
        if path == "." || path.is_empty() {
            anyhow::anyhow!("{inner} {help}")
        } else {
            anyhow::anyhow!("{path}: {inner} {help}")
        }
    })
}

/// serde's words for a value of the wrong type (`invalid type: string "x", expected
/// usize`) in the words of someone writing a plan or typing a flag.
fn plain_words(serde_message: &str) -> String {
    const EXPECTED: [(&str, &str); 13] = [
        ("expected usize", "expected a whole number, not negative"),
        ("expected u128", "expected a whole number, not negative"),
        ("expected u64", "expected a whole number, not negative"),
        ("expected u32", "expected a whole number, not negative"),
        (
            "expected u16",
            "expected a whole number, not negative, up to 65535",
        ),
        (
            "expected u8",
            "expected a whole number, not negative, up to 255",
        ),
        ("expected i64", "expected a whole number"),
        ("expected i32", "expected a whole number"),
        ("expected isize", "expected a whole number"),
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("expected a boolean", "expected true or false"),
        ("expected a sequence", "expected a list"),
    ];
    let mut m = serde_message
        .replacen("invalid type: ", "got ", 1)
        .replacen("invalid value: ", "got ", 1);
    for (serde, plain) in EXPECTED {
        if let Some(at) = m.find(serde) {
            // Whole words only: `expected u8` is not the start of `expected u80`.
            let end = at + serde.len();
            if !m[end..].starts_with(|c: char| c.is_ascii_alphanumeric()) {
                m.replace_range(at..end, plain);
            }
        }
    }
    m
}

/// The figure to give for a number written with its unit (`-d 4K`, `--duration 10s`) or a
/// whole number read as a fraction (`-n 1e5`, read as 100000.0), from [`plain_words`]'
/// message and the setting's `path` (`data_size`, `sizes[0]`), whose name says its unit:
/// `4096 (sizes are in bytes)`, `5 (times are in milliseconds)` for `--sample-ms 5ms`,
/// `10000` for `-n 10k`. Such a value was refused with "expected a number" alone, which
/// did not say the unit is the knob's own. None where the unit is not known for sure
/// (`--duration 10m`: minutes, or a size?).
fn figure_hint(path: &str, message: &str) -> Option<String> {
    let key = path.split(['[', '.']).next().unwrap_or(path);
    let size = key.contains("size") || key.contains("payload") || key == "window";
    let ms = key.ends_with("_ms");
    if !message.contains("expected a whole number") && !message.contains("expected a number") {
        return None;
    }
    if let Some(rest) = message.strip_prefix("got floating point `") {
        let f: f64 = rest.split('`').next()?.parse().ok()?;
        return (f.fract() == 0.0 && f.abs() < 1e15).then(|| format!("{}", f as i64));
    }
    let text = message
        .strip_prefix("got string \"")?
        .split('"')
        .next()?
        .trim();
    let figure = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let n: f64 = figure.trim().parse().ok()?;
    const BYTES: &str = "sizes are in bytes";
    let (factor, unit) = match (text[figure.len()..].to_ascii_lowercase().as_str(), size) {
        ("k" | "kb" | "kib", true) => (1024.0, BYTES),
        ("m" | "mb" | "mib", true) => (1024.0 * 1024.0, BYTES),
        ("g" | "gb" | "gib", true) => (1024.0 * 1024.0 * 1024.0, BYTES),
        // A count or a rate: -n 10k.
        ("k", false) => (1000.0, ""),
        ("s" | "ms" | "min", false) => {
            let seconds = match &text[figure.len()..] {
                "ms" => 0.001,
                "min" => 60.0,
                _ => 1.0,
            };
            match ms {
                true => (seconds * 1000.0, "times are in milliseconds"),
                false => (seconds, "times are in seconds"),
            }
        }
        _ => return None,
    };
    let figure = n * factor;
    Some(match unit {
        "" => format!("{figure}"),
        unit => format!("{figure} ({unit})"),
    })
}

/// Settings of a server rackbench launches (`--instances`, `--server-cpus`), given
/// beside `given_server`, the option naming a server it does not launch (`--target`):
/// they would be ignored and stored as if they applied. `launch_settings` lists the
/// flags of those given (other than their defaults); an error names the first.
pub fn refuse_launch_settings(
    launch_settings: &[&str],
    given_server: &str,
    server: &str,
) -> anyhow::Result<()> {
    if let Some(flag) = launch_settings.first() {
        bail!(
            "{flag} sets up the {server} rackbench launches, and {given_server} names a server \
             it does not launch (which runs as it was set up): leave {flag} out (and set that \
             server up yourself), or leave out {given_server} to have rackbench launch the {server}"
        );
    }
    Ok(())
}

/// A test stops after a count of requests or after a time, not both: given both (`-n` and
/// `--duration`, on the command line or in a plan), one of them was ignored without a word
/// and stored as if it applied (acceptance O, 4: `--duration 1 -n 1000` made 76,997
/// requests and stored `requests=1000`).
pub fn refuse_two_stops(p: &crate::workload::Params) -> anyhow::Result<()> {
    let given = |k: &str| p.get(k).is_some_and(|v| !v.is_null());
    if given("requests") && given("duration") {
        bail!(
            "-n (requests) and --duration both given, and a test stops after one of them: \
             give -n N to stop after N requests, or --duration SECS to stop after that time"
        );
    }
    Ok(())
}

/// Most values one list or range may hold; more is a typo (`1..1000000`), and building
/// it first would spend memory out of all proportion to what was typed.
pub const MAX_SWEEP_VALUES: usize = 10_000;

/// Most points a whole sweep (the product of every list) may have.
pub const MAX_SWEEP_POINTS: usize = 10_000;

/// Most bytes of parameters (as JSON) all of a sweep's points may hold together.
pub const MAX_SWEEP_BYTES: usize = 16 << 20;

/// The JSON size of what one point holds of `v`: one item of a swept list, else all of it.
fn point_bytes(v: &Value, list_key: bool) -> usize {
    let len = |v: &Value| serde_json::to_vec(v).map_or(0, |b| b.len());
    match v.as_array() {
        Some(items) if !list_key && !items.is_empty() => items.iter().map(len).max().unwrap_or(0),
        _ => len(v),
    }
}

/// Parse one flag value as typed by a user: `100` -> number, `true` -> bool,
/// `1,100` -> list, `1..4` -> [1,2,3,4], `1..16:x2` -> [1,2,4,8,16],
/// `0..100:+25` -> [0,25,50,75,100], anything else -> string.
pub fn parse_value(s: &str) -> anyhow::Result<Value> {
    let s = s.trim();
    if s.contains(',') {
        let mut flat = Vec::new();
        for part in s.split(',') {
            // `-c 1,,2` ran clients 1 and 2 without a word: a value left out is a typo.
            if part.trim().is_empty() {
                bail!(
                    "list `{s}` has an empty item: give the values separated by single \
                     commas, e.g. `{}`",
                    s.split(',')
                        .map(str::trim)
                        .filter(|p| !p.is_empty())
                        .collect::<Vec<_>>()
                        .join(",")
                );
            }
            match parse_scalar_or_range(part)? {
                Value::Array(a) => flat.extend(a),
                v => flat.push(v),
            }
            if flat.len() > MAX_SWEEP_VALUES {
                bail!("list `{s}` has more than {MAX_SWEEP_VALUES} values");
            }
        }
        return Ok(Value::Array(flat));
    }
    parse_scalar_or_range(s)
}

fn parse_scalar_or_range(s: &str) -> anyhow::Result<Value> {
    let s = s.trim();
    if let Some((a, rest)) = s.split_once("..") {
        if let Ok(start) = a.trim().parse::<i64>() {
            let (end, step) = match rest.split_once(':') {
                Some((e, st)) => (e, Some(st)),
                None => (rest, None),
            };
            let end: i64 = end
                .trim()
                .parse()
                .with_context(|| format!("range `{s}`: end is not a whole number"))?;
            if end < start {
                bail!("range `{s}`: end is below start");
            }
            let values = match step.map(str::trim) {
                None => arithmetic(s, start, end, 1)?,
                Some(st) if st.starts_with('x') || st.starts_with('*') => {
                    let f: i64 = st[1..]
                        .parse()
                        .with_context(|| format!("range `{s}`: bad factor `{st}`"))?;
                    if f < 2 || start < 1 {
                        bail!("range `{s}`: a factor needs start >= 1 and factor >= 2");
                    }
                    geometric(start, end, f)
                }
                Some(st) => {
                    let inc: i64 = st
                        .trim_start_matches('+')
                        .parse()
                        .with_context(|| format!("range `{s}`: bad step `{st}`"))?;
                    if inc < 1 {
                        bail!("range `{s}`: step must be at least 1");
                    }
                    arithmetic(s, start, end, inc)?
                }
            };
            return Ok(Value::Array(values.into_iter().map(Value::from).collect()));
        }
    }
    Ok(parse_scalar(s))
}

/// `start, start + inc, ...` up to `end`, refused before it is built when it would have
/// more than [`MAX_SWEEP_VALUES`] values (and never stepping past `i64::MAX`).
fn arithmetic(s: &str, start: i64, end: i64, inc: i64) -> anyhow::Result<Vec<i64>> {
    let count = (i128::from(end) - i128::from(start)) / i128::from(inc) + 1;
    if count > MAX_SWEEP_VALUES as i128 {
        bail!("range `{s}` has more than {MAX_SWEEP_VALUES} values");
    }
    let mut out = Vec::with_capacity(count as usize);
    let mut v = Some(start);
    while let Some(x) = v.filter(|x| *x <= end) {
        out.push(x);
        v = x.checked_add(inc);
    }
    Ok(out)
}

/// `start, start * f, ...` up to `end` (at most 63 values for `f >= 2`, `start >= 1`).
fn geometric(start: i64, end: i64, f: i64) -> Vec<i64> {
    let mut out = Vec::new();
    let mut v = Some(start);
    while let Some(x) = v.filter(|x| *x <= end) {
        out.push(x);
        v = x.checked_mul(f);
    }
    out
}

fn parse_scalar(s: &str) -> Value {
    if let Ok(i) = s.parse::<i64>() {
        return Value::from(i);
    }
    if let Ok(f) = s.parse::<f64>() {
        if let Some(n) = Number::from_f64(f) {
            return Value::Number(n);
        }
    }
    match s {
        "true" | "yes" | "on" => Value::Bool(true),
        "false" | "no" | "off" => Value::Bool(false),
        _ => Value::String(s.to_string()),
    }
}

/// Refuse a list setting that names one value twice (`--bits 512,512`, `--udp-payload
/// 1472,1472`): each value is a test of its own, and the same one twice ran twice and was
/// stored as two repetitions of one setting, as a sweep's `-c 2,2` would have been (see
/// [`expand`]). `flag` is how the user gives the list.
pub fn refuse_repeats<T: PartialEq + std::fmt::Display>(
    flag: &str,
    values: &[T],
) -> anyhow::Result<()> {
    if let Some(twice) = first_repeat(values) {
        bail!(
            "{flag} lists {twice} twice: each value is measured once; give each value once, \
             and --repeat N to measure every one N times"
        );
    }
    Ok(())
}

/// The first value of `values` that an earlier one equals, if any.
pub fn first_repeat<T: PartialEq>(values: &[T]) -> Option<&T> {
    values
        .iter()
        .enumerate()
        .find_map(|(i, v)| values[..i].contains(v).then_some(v))
}

/// Expand a workload's parameters into sweep points: every key whose value is an array
/// (and is not in `list_keys`, the keys that are lists by nature such as `tests` or
/// `server_cpus`) is swept; the cartesian product is returned in a stable order (the first
/// key in `order` varies slowest). `list_keys` values that were given as a scalar are
/// wrapped in a one-element list. A product over [`MAX_SWEEP_POINTS`] is an error, found
/// before any point is built (ten lists of ten values would otherwise be 10^10 maps).
pub fn expand(
    params: &Map<String, Value>,
    list_keys: &[&str],
) -> anyhow::Result<Vec<Map<String, Value>>> {
    let total = params
        .iter()
        .filter(|(k, _)| !list_keys.contains(&k.as_str()))
        .filter_map(|(_, v)| v.as_array().map(Vec::len).filter(|n| *n > 0))
        .try_fold(1usize, |acc, n| {
            acc.checked_mul(n).filter(|t| *t <= MAX_SWEEP_POINTS)
        });
    let Some(total) = total else {
        bail!("the sweep has more than {MAX_SWEEP_POINTS} points; narrow the lists or ranges");
    };
    // Every point holds its own copy of each value that is not swept (a long string,
    // a list-natured `server_cpus`): bound the copies too, or 10^4 points x a 10^4-value
    // list would be 10^8 values.
    let per_point: usize = params
        .iter()
        .map(|(k, v)| k.len() + point_bytes(v, list_keys.contains(&k.as_str())))
        .sum();
    if total.saturating_mul(per_point) > MAX_SWEEP_BYTES {
        bail!(
            "the sweep's {total} points would hold {per_point} bytes of parameters each, \
             more than {MAX_SWEEP_BYTES} in all; narrow the lists or ranges"
        );
    }
    // `-c 2,2` made two points of one setting, which every summary then took for two
    // repetitions of it: a sweep names each value once (--repeat measures one again).
    for (key, value) in params {
        if let (Some(items), false) = (value.as_array(), list_keys.contains(&key.as_str())) {
            let mut seen = std::collections::HashSet::with_capacity(items.len());
            // `1,1.0` is one value twice.
            let twice = items
                .iter()
                .find(|v| !seen.insert(model::whole_numbers(v).to_string()));
            if let Some(twice) = twice {
                let twice = twice
                    .as_str()
                    .map_or_else(|| twice.to_string(), str::to_string);
                bail!(
                    "{key} lists {twice} twice: each value of a sweep is one point, measured \
                     once; give each value once, and --repeat N to measure every point N times"
                );
            }
        }
    }
    let mut points = vec![Map::new()];
    for (key, value) in params {
        let is_list_key = list_keys.contains(&key.as_str());
        match value {
            Value::Array(items) if !is_list_key && !items.is_empty() => {
                let mut next = Vec::with_capacity(points.len() * items.len());
                for p in &points {
                    for item in items {
                        let mut q = p.clone();
                        q.insert(key.clone(), item.clone());
                        next.push(q);
                    }
                }
                points = next;
            }
            v if is_list_key && !v.is_array() => {
                for p in &mut points {
                    p.insert(key.clone(), Value::Array(vec![v.clone()]));
                }
            }
            v => {
                for p in &mut points {
                    p.insert(key.clone(), v.clone());
                }
            }
        }
    }
    debug_assert_eq!(points.len(), total);
    Ok(points)
}

/// The swept keys of a parameter map and their values (for labels such as `P=100`).
pub fn swept_keys(params: &Map<String, Value>, list_keys: &[&str]) -> BTreeMap<String, usize> {
    params
        .iter()
        .filter(|(k, v)| {
            !list_keys.contains(&k.as_str()) && v.as_array().is_some_and(|a| a.len() > 1)
        })
        .map(|(k, v)| (k.clone(), v.as_array().map_or(0, Vec::len)))
        .collect()
}

/// Read one setting's text as typed on the command line: [`parse_value`]'s lists, ranges,
/// numbers and booleans, except for the keys in `text_keys` (a workload's
/// [`Registration::text_keys`](crate::workload::Registration::text_keys): a DSN, a URL, a
/// path, a user name), whose text is the value, whole. A multi-host DSN
/// (`postgresql://bench@db1,db2/tpcc`) was split at its comma into a sweep of two broken
/// DSNs, a password with a comma printed in part in the error, and `--user on` read as true.
pub fn parse_setting(key: &str, text: &str, text_keys: &[&str]) -> anyhow::Result<Value> {
    if text_keys.contains(&key) {
        return Ok(Value::String(text.to_string()));
    }
    parse_value(text)
}

/// Read plan-file strings as the same flag's text is read ([`parse_setting`]), recursively:
/// sweeps (`"1..16:x2"`, `"1,100"`) become lists, `"0"` the number 0, `"no"` false; a
/// string of one of `text_keys` stays the string written. Numbers, booleans and arrays
/// written natively in TOML stay as they are. A plan's `server_cpus = "0"` was stored as
/// the string, the flag's `--server-cpus 0` as the number, and compare called two such
/// runs "NOT like for like" (acceptance L, 1).
pub fn normalize(v: Value, text_keys: &[&str]) -> Value {
    match v {
        Value::String(s) => parse_value(&s).unwrap_or(Value::String(s)),
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| match v {
                    Value::String(s) => {
                        let v = parse_setting(&k, &s, text_keys).unwrap_or(Value::String(s));
                        (k, v)
                    }
                    v => (k, normalize(v, text_keys)),
                })
                .collect(),
        ),
        v => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A key neither a workload's config nor the settings read beside it know is told
    /// both lists (acceptance M, 10: a plan's `[kv]` typo was told the load test's keys
    /// alone, as if `step_duration` were not one).
    #[test]
    fn an_unknown_key_is_told_every_key_it_could_be() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Load {
            clients: usize,
        }
        let params = json!({"clients": 1, "step_duraton": 2})
            .as_object()
            .unwrap()
            .clone();
        let e = config_from_params_beside::<Load>("kv", &params, &["step_duration"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("expected `clients`, or one of `step_duration`"),
            "{e}"
        );
        assert!(e.ends_with("(see `rackbench run kv --help`)"), "{e}");
        let e = config_from_params::<Load>("kv", &params)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("or one of"), "{e}");
    }

    /// A plan's string is the value the same text given to its flag is: a run from a plan
    /// and one from the command line at the same settings store the same settings.
    #[test]
    fn a_plans_strings_are_read_as_the_flags_text() {
        for text in [
            "0",
            "0-1",
            "1,100",
            "1..16:x2",
            "2.5",
            "no",
            "127.0.0.1:6379",
            "get",
        ] {
            let plan = normalize(json!({ "k": text }), &[]);
            assert_eq!(plan["k"], parse_value(text).unwrap(), "{text}");
        }
        assert_eq!(
            normalize(
                json!({"server_cpus": "0", "verify": "no", "nested": {"p": "1,4"}}),
                &[]
            ),
            json!({"server_cpus": 0, "verify": false, "nested": {"p": [1, 4]}})
        );
        // Written natively in TOML, kept as written.
        let native = json!({"server_cpus": [0], "clients": 50, "verify": true});
        assert_eq!(normalize(native.clone(), &[]), native);
    }

    /// A setting whose value is free text is taken whole, from a flag or a plan: a
    /// multi-host DSN was split at its comma into a sweep of two broken DSNs (and the
    /// error printed part of a password with a comma), a query's comma split a URL, and
    /// `--user on` was read as true, `--user 123` as a number.
    #[test]
    fn a_text_setting_is_taken_whole() {
        let text = ["dsn", "target", "user"];
        for (key, typed) in [
            (
                "dsn",
                "postgresql://bench@127.0.0.1:1,127.0.0.1:2/tpcc?connect_timeout=2",
            ),
            ("dsn", "postgresql://u:topsec,ret42@127.0.0.1:1/tpcc"),
            ("target", "http://127.0.0.1:1/search?q=a,b"),
            ("user", "on"),
            ("user", "123"),
            ("user", "a,,b"),
        ] {
            assert_eq!(parse_setting(key, typed, &text).unwrap(), json!(typed));
            let plan = normalize(json!({ key: typed }), &text);
            assert_eq!(plan, json!({ key: typed }), "{typed}");
        }
        // Other settings are read as before.
        assert_eq!(
            parse_setting("clients", "1,2", &text).unwrap(),
            json!([1, 2])
        );
        assert_eq!(
            normalize(json!({"clients": "1,2", "verify": "no"}), &text),
            json!({"clients": [1, 2], "verify": false})
        );
    }

    /// A plan's value of the wrong type is said in plain words, with the key and where
    /// to look: "expected usize" meant nothing to someone who wrote `clients = "many"`.
    #[test]
    fn a_value_of_the_wrong_type_is_said_in_plain_words() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Cfg {
            clients: usize,
            verify: bool,
            rate: f64,
            port: u16,
            tests: Vec<String>,
        }
        let good = json!({"clients": 1, "verify": true, "rate": 1.0, "port": 1, "tests": []});
        let with = |key: &str, v: Value| {
            let mut p = good.as_object().unwrap().clone();
            p.insert(key.into(), v);
            let e = config_from_params::<Cfg>("kv", &p).unwrap_err();
            format!("{e:#}")
        };
        assert_eq!(
            with("clients", json!("many")),
            "clients: got string \"many\", expected a whole number, not negative \
             (see `rackbench run kv --help`)"
        );
        assert!(with("clients", json!(-1))
            .contains("got integer `-1`, expected a whole number, not negative"));
        assert!(with("verify", json!("maybe")).contains("expected true or false"));
        assert!(with("rate", json!("fast")).contains("expected a number"));
        assert!(with("port", json!(70000))
            .contains("expected a whole number, not negative, up to 65535"));
        assert!(with("tests", json!(5)).contains("tests: got integer `5`, expected a list"));
        assert!(with("tests", json!([5])).contains("tests[0]: got integer `5`, expected a string"));
    }

    /// `-d 4K` and `--duration 10s` were refused with "expected a number" alone, and
    /// `-n 1e5` as "floating point `100000.0`": the error says the figure to give.
    #[test]
    fn a_figure_with_its_unit_is_told_the_figure_to_give() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Cfg {
            data_size: Option<usize>,
            sample_ms: Option<f64>,
            duration: Option<f64>,
            requests: Option<u64>,
        }
        let error = |key: &str, v: Value| {
            let p = json!({ key: v }).as_object().unwrap().clone();
            format!("{:#}", config_from_params::<Cfg>("kv", &p).unwrap_err())
        };
        let e = error("data_size", parse_value("4K").unwrap());
        assert!(
            e.contains("not negative: give 4096 (sizes are in bytes)"),
            "{e}"
        );
        let e = error("duration", parse_value("10s").unwrap());
        assert!(
            e.contains("expected a number: give 10 (times are in seconds)"),
            "{e}"
        );
        let e = error("requests", parse_value("1e5").unwrap());
        assert!(e.contains("not negative: give 100000 ("), "{e}");
        // The setting's own unit: milliseconds for a `_ms` knob, a thousand for a count,
        // none where `m` could be minutes or mebibytes.
        let e = error("sample_ms", parse_value("5ms").unwrap());
        assert!(e.contains("give 5 (times are in milliseconds)"), "{e}");
        let e = error("requests", parse_value("10k").unwrap());
        assert!(e.contains("not negative: give 10000 ("), "{e}");
        let e = error("duration", parse_value("10m").unwrap());
        assert!(!e.contains("give"), "{e}");
        // No figure: no advice.
        let e = error("requests", json!("many"));
        assert!(!e.contains("give"), "{e}");
    }

    #[test]
    fn fuzz_regression_ranges_to_i64_max_are_refused_not_built() {
        // `1..9223372036854775807` was built value by value (memory without bound) and
        // `v += 1` overflowed at the end; `x2` and `+N` steps overflowed the same way.
        assert!(parse_value("1..9223372036854775807").is_err());
        assert!(parse_value("-9223372036854775808..9223372036854775807").is_err());
        assert_eq!(
            parse_value("9223372036854775806..9223372036854775807").unwrap(),
            json!([9223372036854775806i64, 9223372036854775807i64])
        );
        assert_eq!(
            parse_value("4611686018427387904..9223372036854775807:x2").unwrap(),
            json!([4611686018427387904i64])
        );
        assert_eq!(
            parse_value("9223372036854775800..9223372036854775807:+5").unwrap(),
            json!([9223372036854775800i64, 9223372036854775805i64])
        );
    }

    #[test]
    fn fuzz_regression_many_lists_are_refused_before_expanding() {
        // Each list is small, the product is not: the old check ran after building it.
        let p = json!({"a": (0..10).collect::<Vec<_>>(), "b": (0..10).collect::<Vec<_>>(),
            "c": (0..10).collect::<Vec<_>>(), "d": (0..10).collect::<Vec<_>>(),
            "e": (0..10).collect::<Vec<_>>()});
        assert!(expand(p.as_object().unwrap(), &[]).is_err());
        let many = ["0..9999"; 3].join(",");
        assert!(parse_value(&many).is_err());
        // Found by fuzz_plan_expand: a long value copied into every point.
        let p = json!({"tests": (0..5000).collect::<Vec<_>>(), "b": (0..5000).collect::<Vec<_>>()});
        assert!(expand(p.as_object().unwrap(), &["tests"]).is_err());
        let p = json!({"s": "x".repeat(4000), "b": (0..9999).collect::<Vec<_>>()});
        assert!(expand(p.as_object().unwrap(), &[]).is_err());
        let p = json!({"s": "x".repeat(100), "b": (0..9999).collect::<Vec<_>>()});
        assert_eq!(expand(p.as_object().unwrap(), &[]).unwrap().len(), 9999);
    }

    #[test]
    fn parses_lists_ranges_and_scalars() {
        assert_eq!(parse_value("100").unwrap(), json!(100));
        assert_eq!(parse_value("1,100").unwrap(), json!([1, 100]));
        assert_eq!(parse_value("1..4").unwrap(), json!([1, 2, 3, 4]));
        assert_eq!(parse_value("1..16:x2").unwrap(), json!([1, 2, 4, 8, 16]));
        assert_eq!(
            parse_value("0..100:+25").unwrap(),
            json!([0, 25, 50, 75, 100])
        );
        assert_eq!(parse_value("1,4..6").unwrap(), json!([1, 4, 5, 6]));
        assert_eq!(parse_value("set,get").unwrap(), json!(["set", "get"]));
        assert_eq!(parse_value("0.5").unwrap(), json!(0.5));
        assert_eq!(parse_value("true").unwrap(), json!(true));
        assert_eq!(parse_value("poisson").unwrap(), json!("poisson"));
        assert!(parse_value("4..1").is_err());
        assert!(parse_value("1..x").is_err());
    }

    #[test]
    fn cartesian_product_skips_list_keys() {
        let p = json!({"pipeline": [1, 100], "instances": [1, 2], "tests": ["set", "get"], "clients": 50});
        let points = expand(p.as_object().unwrap(), &["tests"]).unwrap();
        assert_eq!(points.len(), 4);
        assert!(points
            .iter()
            .all(|q| q["tests"] == json!(["set", "get"]) && q["clients"] == json!(50)));
        let combos: Vec<(i64, i64)> = points
            .iter()
            .map(|q| {
                (
                    q["instances"].as_i64().unwrap(),
                    q["pipeline"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(combos, vec![(1, 1), (1, 100), (2, 1), (2, 100)]);
    }

    /// `--bits 512,512` measured one size twice, as two repetitions of it: a list's value
    /// given twice is refused, as a sweep's is.
    #[test]
    fn a_list_naming_a_value_twice_is_refused() {
        assert_eq!(
            refuse_repeats("--bits", &[512, 1024, 512])
                .unwrap_err()
                .to_string(),
            "--bits lists 512 twice: each value is measured once; give each value once, and \
             --repeat N to measure every one N times"
        );
        assert!(refuse_repeats("--bits", &[512, 1024]).is_ok());
        let tests = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let e = crate::workload::refuse_repeated_tests(&tests(&["set", "get", "set"]));
        assert!(e
            .unwrap_err()
            .to_string()
            .starts_with("the test set is asked for twice"));
        assert!(crate::workload::refuse_repeated_tests(&tests(&["set", "get"])).is_ok());
    }

    #[test]
    fn scalar_list_key_is_wrapped() {
        let p = json!({"tests": "set"});
        let points = expand(p.as_object().unwrap(), &["tests"]).unwrap();
        assert_eq!(points[0]["tests"], json!(["set"]));
    }
}
