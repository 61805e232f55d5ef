//! Formatting shared by every output: HTML escaping (everything from a host, a plan or a
//! label passes through [`esc`]), numbers with thousands separators or SI prefixes, and
//! aligned text tables.

/// Escape text for HTML element content and quoted attribute values (also valid in SVG).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are invalid in XML (the SVG files): drop them, and the
            // two noncharacters XML 1.0 refuses too (one label broke every chart).
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {}
            '\u{FFFE}' | '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// A figure for a table: thousands separators for large ones, 3 significant digits else.
pub fn num(v: f64) -> String {
    tco::fmt_number(v)
}

/// A figure to `decimals` places, as a table column of like figures prints them
/// (`0.042` ms of jitter, `12.5` %CPU), except one that would read as zero and is not:
/// that one keeps three significant digits ([`num`]: a jitter of 0.00035 ms reads
/// `0.000350`, not `0.000`; an interval's loss of -0.0004% reads `-0.000400`, not
/// `-0.000`). A true 0 stays `0.000`, and every figure that keeps a nonzero digit at
/// `decimals` places prints as before.
pub fn fixed(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    let reads_zero = s
        .trim_start_matches('-')
        .chars()
        .all(|c| c == '0' || c == '.');
    if reads_zero && v != 0.0 && v.is_finite() {
        num(v)
    } else {
        s
    }
}

/// A share in percent to `decimals` places, as [`fixed`], that reads 100 only when it
/// is: one just under (2 of 652,304 requests under a threshold) keeps the places that
/// tell it from 100 (`99.99969`), where `{:.2}` printed "100.00" (acceptance N, 5).
pub fn share(v: f64, decimals: usize) -> String {
    below_100(v, fixed(v, decimals))
}

/// A share in percent as [`num`] prints a figure, that reads 100 only when it is, as
/// [`share`]: a compare's side of 99.999982% read `100.0 %` beside the other's `100 %`,
/// with `-0.000018 pts` between them (acceptance P, 6).
pub fn share_num(v: f64) -> String {
    below_100(v, num(v))
}

/// `s`, the share `v` printed, or, where it reads 100 and `v` is below, `v` to the
/// places that tell it from 100 (`99.99969`).
fn below_100(v: f64, s: String) -> String {
    if v < 100.0 && v.is_finite() && s.replace(',', "").parse::<f64>().is_ok_and(|x| x >= 100.0) {
        let places = (-(100.0 - v).log10()).ceil().max(0.0) as usize + 1;
        format!("{v:.places$}")
    } else {
        s
    }
}

/// Figures said together (a NIC's received / sent Gbit/s in one cell) to one number of
/// places: `decimals`, or, where one of them would read as zero and is not, the places
/// that give it [`fixed`]'s three significant digits, for every one of them below 1 (a
/// figure of 1 or more keeps `decimals`: `1234.50 / 0.00400`, not `1234.50000`). Printed
/// each by [`fixed`], a pair read `0.00 / 0.00410`.
pub fn fixed_alike(values: &[f64], decimals: usize) -> Vec<String> {
    let places = values
        .iter()
        .filter(|v| v.is_finite() && **v != 0.0)
        .map(|v| {
            let lead = (-v.abs().log10().floor()).max(0.0) as usize;
            // The places a figure below 1 needs for three significant digits, at most as
            // many as `fixed` would give it.
            if format!("{:.decimals$}", v.abs())
                .trim_start_matches(['0', '.'])
                .is_empty()
            {
                (lead + 2).min(20)
            } else {
                decimals
            }
        })
        .fold(decimals, usize::max);
    values
        .iter()
        .map(|v| {
            if v.abs() >= 1.0 {
                format!("{v:.decimals$}")
            } else {
                format!("{v:.places$}")
            }
        })
        .collect()
}

/// Watts as every power column and figure of the console views prints them: to 0.1 W,
/// whether or not the mean happens to be whole (`200.0` beside `199.7`, never `200`).
pub fn watts(v: f64) -> String {
    fixed(v, 1)
}

/// A count (a metric in a count unit, [`model::is_count_unit`]: transactions, requests,
/// errors, connections): a whole number, never `91.0`. A mean of counts over repetitions
/// rounds to the nearest one.
pub fn count(v: f64) -> String {
    if v.is_finite() {
        // Half up, as [`num`] (`{:.0}` rounds a tie to even: 90.5 read 90 here, 91 there).
        format!("{}", v.round())
    } else {
        "n/a".into()
    }
}

/// A figure with no count unit that is whole when it is exact: a demanded rate or a
/// level's target (settings, echoed as asked: `91`, `20`, `4,321`), where [`num`]'s three
/// significant digits would print `91.0` and `20.0` beside `100`; any other figure as
/// [`num`] prints it. A metric in a count unit prints by [`count`] or, in a report's
/// table, [`count_in_table`] (the unit's contract, in `model`).
pub fn whole_or_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 100.0 {
        count(v)
    } else {
        num(v)
    }
}

/// A count in a report's table: whole ([`count`]: a mean of counts rounds), with the
/// thousands separators of the table's other figures (`123,456`).
pub fn count_in_table(v: f64) -> String {
    if v.is_finite() && v.abs() >= 1000.0 {
        num(v.round())
    } else {
        count(v)
    }
}

/// A figure with an SI prefix for axis ticks and chart labels (`1.2M`, `350k`, `0.25`).
pub fn si(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let a = v.abs();
    let (d, p, scale) = if a >= 1e9 {
        (v / 1e9, "G", 1e9)
    } else if a >= 1e6 {
        (v / 1e6, "M", 1e6)
    } else if a >= 1e3 {
        (v / 1e3, "k", 1e3)
    } else {
        (v, "", 1.0)
    };
    // The prefix is chosen before rounding: 999,600 is 999.6k, which rounds to 1000k.
    // Rounded up to 1000 of one prefix, it is 1 of the next ("1M").
    if d.abs() >= 999.5 && p != "G" {
        return si(1000.0 * scale * v.signum());
    }
    let s = if d.abs() >= 100.0 || d == d.trunc() {
        format!("{d:.0}")
    } else if d.abs() >= 10.0 {
        format!("{d:.1}")
    } else if d.abs() >= 0.1 {
        format!("{d:.2}")
    } else {
        // Three significant digits: a perf/W of 0.00045 Gbit/s per W read "0", and
        // 0.00089 and 0.0011 both "0.001".
        let places = (2 - d.abs().log10().floor() as i32).clamp(3, 15) as usize;
        format!("{d:.places$}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{s}{p}")
}

pub use model::hist::latency_ns;

/// Bit-rate units and their multiplier from Gbit/s, largest first.
const BIT_RATES: [(f64, &str); 4] = [
    (1.0, "Gbit/s"),
    (1e3, "Mbit/s"),
    (1e6, "kbit/s"),
    (1e9, "bit/s"),
];

/// The unit for rates given in Gbit/s: the largest in which the smallest nonzero one is
/// at least 1, so that every figure keeps three significant digits (60-byte UDP reads
/// `98.4 Mbit/s`, not `0.10 Gbit/s`). Returns (multiplier from Gbit/s, unit).
pub fn bit_rate_unit(gbit: &[f64]) -> (f64, &'static str) {
    let least = gbit
        .iter()
        .map(|v| v.abs())
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    BIT_RATES
        .iter()
        .copied()
        .find(|(m, _)| least * m >= 1.0)
        .unwrap_or(BIT_RATES[BIT_RATES.len() - 1])
}

/// A rate given in Gbit/s in its own unit, with at least three significant digits
/// (`15.57 Gbit/s`, `98.40 Mbit/s`, `512 kbit/s`).
pub fn bit_rate(gbit: f64) -> String {
    bit_rate_in(gbit, bit_rate_unit(&[gbit]))
}

/// [`bit_rate`] in a unit chosen for a whole column ([`bit_rate_unit`] over its figures),
/// so one column never mixes Gbit/s and Mbit/s.
pub fn bit_rate_in(gbit: f64, (m, u): (f64, &str)) -> String {
    let v = gbit * m;
    if v.abs() >= 100.0 {
        format!("{} {u}", num(v))
    } else {
        format!("{v:.2} {u}")
    }
}

/// Aligned text table; the first row is the header.
pub fn text_table(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut w = vec![0; n];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for (ri, r) in rows.iter().enumerate() {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            line.push_str(c);
            line.push_str(&" ".repeat(w[i] - c.chars().count() + 2));
        }
        out.push_str(line.trim_end());
        out.push('\n');
        if ri == 0 {
            // Under the header: the last column, ragged, as wide as its heading (a long
            // verdict drew a line of 290 dashes).
            let last = r.last().map_or(0, |c| c.chars().count());
            let before: usize = w.iter().take(n.saturating_sub(1)).map(|x| x + 2).sum();
            out.push_str(&"-".repeat(before + last));
            out.push('\n');
        }
    }
    out
}

/// Text made safe for a Markdown table cell and inert ([`tco::md`], whose TCO table the
/// report embeds).
pub fn md(s: &str) -> String {
    tco::md(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line under a text table's header runs to its last heading, not to the longest
    /// cell of its ragged last column (a long verdict drew 290 dashes).
    #[test]
    fn a_text_tables_rule_ends_at_the_last_heading() {
        let rows = vec![
            vec!["point".to_string(), "verdict".to_string()],
            vec!["kv get".to_string(), "x".repeat(60)],
        ];
        let t = text_table(&rows);
        let rule = t.lines().nth(1).unwrap();
        assert_eq!(rule, "-".repeat("kv get  verdict".len()), "{t}");
    }

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc("<script>alert(1)</script>\"'&"),
            "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"
        );
        assert_eq!(esc("a\u{1}b"), "ab");
        assert_eq!(esc("a\u{fffe}b\u{ffff}"), "ab");
    }

    #[test]
    fn markdown_cells_carry_no_control_characters() {
        let m = md("evil\u{1b}[31mred\nline|x");
        assert!(!m.chars().any(char::is_control), "{m:?}");
        assert_eq!(m, "evil\\u{1b}\\[31mred line\\|x");
    }

    /// A bare URL in a label stays text in Markdown: GitHub would autolink
    /// `https://evil.example`, `www.evil.example` and `me@evil.example` (issue 13 item 15).
    #[test]
    fn markdown_cells_make_no_autolinks() {
        let m = md("see https://evil.example/x or HTTP://a.b, www.evil.example, me@evil.example");
        assert_eq!(
            m,
            "see https&#58;//evil.example/x or HTTP&#58;//a.b, www&#46;evil.example, me&#64;evil.example"
        );
        for bare in ["://", "www.", "@"] {
            assert!(!m.contains(bare), "{bare} left in {m}");
        }
        // Words that merely contain the letters are left alone.
        assert_eq!(
            md("a:b ratio 1:2, awww.x, run@a, a@b."),
            "a:b ratio 1:2, awww.x, run@a, a@b."
        );
    }

    /// Watts print alike whether or not the mean is whole; counts print whole.
    #[test]
    fn watts_and_counts_print_one_way() {
        assert_eq!(watts(200.0), "200.0");
        assert_eq!(watts(199.96), "200.0");
        assert_eq!(count(91.0), "91");
        assert_eq!(whole_or_num(91.0), "91");
        assert_eq!(whole_or_num(20.0), "20");
        assert_eq!(whole_or_num(4321.0), "4,321");
        assert_eq!(whole_or_num(91.5), "91.5");
        assert_eq!(whole_or_num(0.25), "0.250");
        assert_eq!(count(90.6), "91");
        assert_eq!(count_in_table(91.5), "92");
        // A tie rounds half up under 1,000 too (`{:.0}` made 90.5 read 90).
        assert_eq!(count(90.5), "91");
        assert_eq!(count_in_table(90.5), "91");
        assert_eq!(count_in_table(123_456.4), "123,456");
        assert!(model::is_count_unit("transactions"));
        assert!(!model::is_count_unit("transactions/min"));
        for unit in ["B", "ops", "count", "packets"] {
            assert!(model::is_count_unit(unit), "{unit}");
        }
        assert!(!model::is_count_unit("ops/s"));
    }

    #[test]
    fn bit_rates_keep_three_significant_digits() {
        assert_eq!(bit_rate(0.1004), "100 Mbit/s");
        assert_eq!(bit_rate(0.0984), "98.40 Mbit/s");
        assert_eq!(bit_rate(15.57), "15.57 Gbit/s");
        assert_eq!(bit_rate(0.000512), "512 kbit/s");
        assert_eq!(bit_rate_unit(&[15.0, 0.1]), (1e3, "Mbit/s"));
        assert_eq!(bit_rate_unit(&[15.0, 0.0]), (1.0, "Gbit/s"));
    }

    /// A figure that rounds to zero at a column's places keeps its significant digits
    /// (a UDP jitter of 0.00035 ms printed `0.000`); every other figure prints as before.
    #[test]
    fn fixed_places_never_round_a_figure_to_zero() {
        assert_eq!(fixed(0.00035, 3), "0.000350");
        assert_eq!(fixed(-0.0004, 3), "-0.000400");
        assert_eq!(fixed(0.04, 1), "0.0400");
        assert_eq!(fixed(0.0000000012, 2), "0.00000000120");
        // Ordinary figures, and a true zero, as `{:.N}` prints them.
        assert_eq!(fixed(0.042, 3), "0.042");
        assert_eq!(fixed(0.0005, 3), "0.001");
        assert_eq!(fixed(12.3456, 2), "12.35");
        assert_eq!(fixed(99.96, 1), "100.0");
    }

    /// Acceptance N, 5: a share just under 100% never reads 100.
    #[test]
    fn a_share_reads_100_only_when_it_is() {
        assert_eq!(share(100.0 * 652_302.0 / 652_304.0, 2), "99.99969");
        assert_eq!(share(100.0, 2), "100.00");
        assert_eq!(share(99.5, 2), "99.50");
        assert_eq!(share(99.996, 2), "99.9960");
        assert_eq!(share(0.0004, 2), fixed(0.0004, 2));
    }

    /// K13: a disk's read / written MB/s read `0.00 / 0.00410` in one cell.
    #[test]
    fn figures_said_together_have_one_number_of_places() {
        assert_eq!(fixed_alike(&[0.0, 0.0041], 2), ["0.00000", "0.00410"]);
        assert_eq!(fixed_alike(&[1.5, 0.00035], 3), ["1.500", "0.000350"]);
        assert_eq!(fixed_alike(&[12.345, 0.5], 2), ["12.35", "0.50"]);
        assert_eq!(fixed_alike(&[0.0, 0.0], 2), ["0.00", "0.00"]);
        assert_eq!(fixed_alike(&[1234.5, 0.004], 2), ["1234.50", "0.00400"]);
        assert_eq!(fixed_alike(&[-0.0004, 2.0], 3), ["-0.000400", "2.000"]);
        assert_eq!(fixed(0.0, 3), "0.000");
        assert_eq!(fixed(7.0, 0), "7");
        assert_eq!(fixed(0.4, 0), "0.400");
    }

    #[test]
    fn si_prefixes() {
        assert_eq!(si(1_250_000.0), "1.25M");
        assert_eq!(si(350_000.0), "350k");
        assert_eq!(si(0.25), "0.25");
        assert_eq!(si(0.00045), "0.00045");
        assert_eq!(si(0.00089), "0.00089");
        assert_eq!(si(0.0011), "0.0011");
        assert_eq!(si(0.05), "0.05");
        assert_eq!(si(-0.000123456), "-0.000123");
        assert_eq!(si(2000.0), "2k");
        // The prefix was chosen before rounding: 999,600 read "1000k".
        assert_eq!(si(999_600.0), "1M");
        assert_eq!(si(-999_600.0), "-1M");
        assert_eq!(si(999.7), "1k");
        assert_eq!(si(999_700_000.0), "1G");
        assert_eq!(si(999_400.0), "999k");
        assert_eq!(si(999.4), "999");
        assert_eq!(latency_ns(1_234_567.0), "1.235 ms");
    }
}
