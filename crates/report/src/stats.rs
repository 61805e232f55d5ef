//! Small statistics: means, sample standard deviation, Welch's and the paired t-test
//! with their 95% confidence interval (METHODS section 10: report n, mean +- sd, the
//! difference with a CI and a significance verdict at p < 0.05; never compare single runs
//! as if they were certain). The Student t distribution is computed here from the
//! regularized incomplete beta function (continued fraction, Numerical Recipes 6.4) to
//! avoid a dependency.

use serde::{Deserialize, Serialize};

/// Arithmetic mean (None when empty).
pub fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Geometric mean of positive values (None when empty or any value is not positive).
pub fn geomean(v: &[f64]) -> Option<f64> {
    if v.is_empty() || v.iter().any(|x| !(x.is_finite() && *x > 0.0)) {
        return None;
    }
    Some((v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// Sample standard deviation (n - 1); None below two values.
pub fn stdev(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let m = mean(v)?;
    Some((v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt())
}

/// The means of both figures of `pairs` (a throughput and the watts or CPU it is set
/// against, per repetition): the terms of a ratio of means. None without pairs.
pub fn means_of_pairs(pairs: impl IntoIterator<Item = (f64, f64)>) -> Option<(f64, f64)> {
    let (a, b, n) = pairs
        .into_iter()
        .fold((0.0, 0.0, 0usize), |(a, b, n), (x, y)| {
            (a + x, b + y, n + 1)
        });
    (n > 0).then(|| (a / n as f64, b / n as f64))
}

/// n, mean and sample standard deviation of a set of repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub n: usize,
    pub mean: f64,
    /// None with one value.
    pub sd: Option<f64>,
}

impl Sample {
    pub fn of(v: &[f64]) -> Option<Sample> {
        Some(Sample {
            n: v.len(),
            mean: mean(v)?,
            sd: stdev(v),
        })
    }
    /// The ratio of means R = mean(t) / mean(w) over n pairs (t_i, w_i) (throughput and
    /// watts: perf/W over several runs is their mean throughput over their mean power, not
    /// the mean of each run's ratio), with the delta method's spread: sd is the sample sd
    /// of z_i = (t_i - R w_i) / mean(w), so that sd / sqrt(n), as [`welch`] takes it, is
    /// R's standard error. None without pairs or where mean(w) is not above zero.
    pub fn ratio_of_means(pairs: &[(f64, f64)]) -> Option<Sample> {
        let t: Vec<f64> = pairs.iter().map(|p| p.0).collect();
        let w: Vec<f64> = pairs.iter().map(|p| p.1).collect();
        let (mt, mw) = (mean(&t)?, mean(&w)?);
        if mw.is_nan() || mw <= 0.0 {
            return None;
        }
        let r = mt / mw;
        let z: Vec<f64> = pairs.iter().map(|(t, w)| (t - r * w) / mw).collect();
        Some(Sample {
            n: pairs.len(),
            mean: r,
            sd: stdev(&z),
        })
    }

    /// Coefficient of variation in percent (PTS flags above ~2.5-3.5%): [`model::cv_pct`]
    /// of the values it summarises, from their mean and sd.
    pub fn cv_pct(&self) -> Option<f64> {
        self.sd
            .filter(|_| self.mean != 0.0)
            .map(|s| 100.0 * s / self.mean.abs())
    }
}

/// A t-test of `b` against `a`: Welch's two-sample ([`welch`]) or a paired one
/// ([`paired_t`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TTest {
    pub t: f64,
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// 95% confidence interval of mean(b) - mean(a).
    pub ci95_low: f64,
    pub ci95_high: f64,
}

/// Welch's t-test; None unless both sides have at least two values, and None when
/// neither side has any spread but their means differ ([`no_spread`]).
pub fn welch(a: &Sample, b: &Sample) -> Option<TTest> {
    let (sa, sb) = (a.sd?, b.sd?);
    let (na, nb) = (a.n as f64, b.n as f64);
    let va = sa * sa / na;
    let vb = sb * sb / nb;
    let se = (va + vb).sqrt();
    let diff = b.mean - a.mean;
    if se == 0.0 {
        // Identical values on both sides and the same mean: nothing differs.
        return (diff == 0.0).then_some(TTest {
            t: 0.0,
            df: na + nb - 2.0,
            p: 1.0,
            ci95_low: 0.0,
            ci95_high: 0.0,
        });
    }
    let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let t = diff / se;
    let p = 2.0 * student_t_sf(t.abs(), df);
    let q = student_t_quantile(0.975, df);
    Some(TTest {
        t,
        df,
        p,
        ci95_low: diff - q * se,
        ci95_high: diff + q * se,
    })
}

/// The paired t-test of `b` against `a` over pairs `(a_i, b_i)` measured side by side
/// (a run's interleaved variants: repetition i of each ran beside the other's, so what
/// drifted between repetitions is in both and drops out of b_i - a_i): the one-sample t
/// of the differences, n - 1 degrees of freedom. None under two pairs, and when every
/// difference is the same non-zero value (nothing to divide by, as [`no_spread`]).
pub fn paired_t(pairs: &[(f64, f64)]) -> Option<TTest> {
    let d: Vec<f64> = pairs.iter().map(|(a, b)| b - a).collect();
    let (md, sd) = (mean(&d)?, stdev(&d)?);
    let n = d.len() as f64;
    let df = n - 1.0;
    let se = sd / n.sqrt();
    if se == 0.0 {
        return (md == 0.0).then_some(TTest {
            t: 0.0,
            df,
            p: 1.0,
            ci95_low: 0.0,
            ci95_high: 0.0,
        });
    }
    let t = md / se;
    let q = student_t_quantile(0.975, df);
    Some(TTest {
        t,
        df,
        p: 2.0 * student_t_sf(t.abs(), df),
        ci95_low: md - q * se,
        ci95_high: md + q * se,
    })
}

/// Whether two samples have no spread at all and different means: a t-test has nothing
/// to divide by. Equal values within a side are common where a figure is quantised (a
/// histogram keeps 3 significant digits, so runs' p99s often fall in one bucket); such a
/// difference is neither exact nor certain, so it gets no p-value and no interval.
pub fn no_spread(a: &Sample, b: &Sample) -> bool {
    a.sd == Some(0.0) && b.sd == Some(0.0) && a.mean != b.mean
}

/// P(T > t) for Student's t with `df` degrees of freedom, t >= 0.
pub fn student_t_sf(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    let x = df / (df + t * t);
    0.5 * reg_inc_beta(df / 2.0, 0.5, x)
}

/// The q-quantile (0.5 < q < 1) of Student's t, by bisection on the survival function.
pub fn student_t_quantile(q: f64, df: f64) -> f64 {
    let target = 1.0 - q;
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    // Grow the bracket; bounded (t at df=1, q=0.9999 is ~3183).
    for _ in 0..64 {
        if student_t_sf(hi, df) < target {
            break;
        }
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if student_t_sf(mid, df) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

fn ln_gamma(x: f64) -> f64 {
    // Lanczos approximation (g = 7, n = 9), good to ~1e-15 for x > 0.
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Regularized incomplete beta I_x(a, b).
fn reg_inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_tables() {
        // Two-sided 95% critical values from any t table.
        for (df, want) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (5.0, 2.571),
            (10.0, 2.228),
            (30.0, 2.042),
            (1000.0, 1.962),
        ] {
            let q = student_t_quantile(0.975, df);
            assert!((q - want).abs() < 1e-3, "df {df}: {q} vs {want}");
        }
    }

    #[test]
    fn welch_matches_scipy() {
        // By hand: t = 3.5 / sqrt(1.6667/4 + 5/5) = 2.9406, Welch df = 6.519, and the
        // two-sided p by numerical integration of the t density = 0.02354.
        let a = Sample::of(&[10.0, 11.0, 12.0, 13.0]).unwrap();
        let b = Sample::of(&[12.0, 14.0, 15.0, 16.0, 18.0]).unwrap();
        let w = welch(&a, &b).unwrap();
        assert!((w.t - 2.9406).abs() < 1e-3, "t {}", w.t);
        assert!((w.df - 6.519).abs() < 1e-2, "df {}", w.df);
        assert!((w.p - 0.02354).abs() < 2e-4, "p {}", w.p);
        assert!(w.ci95_low > 0.0 && w.ci95_high > w.ci95_low);
    }

    /// Two variants whose every repetition drifted together: unpaired, the drift swamps a
    /// steady 2% gain; paired, the differences 2, 2.1, 1.9, 2 judge it.
    #[test]
    fn a_paired_test_takes_out_what_drifted_in_both() {
        let pairs = [
            (100.0, 102.0),
            (110.0, 112.1),
            (120.0, 121.9),
            (130.0, 132.0),
        ];
        let a = Sample::of(&pairs.map(|p| p.0)).unwrap();
        let b = Sample::of(&pairs.map(|p| p.1)).unwrap();
        assert!(welch(&a, &b).unwrap().p > 0.5);
        let t = paired_t(&pairs).unwrap();
        // By hand: mean d 2.0, sd 0.08165, se 0.040825, t 48.99 on 3 df; t(0.975, 3)
        // 3.1824 gives 2.0 +- 0.1299.
        assert!((t.t - 48.99).abs() < 0.01, "{t:?}");
        assert_eq!(t.df, 3.0);
        assert!(t.p < 1e-4, "{t:?}");
        assert!((t.ci95_low - 1.8701).abs() < 1e-3 && (t.ci95_high - 2.1299).abs() < 1e-3);
        // The same difference in every pair: nothing to divide by.
        assert_eq!(paired_t(&[(1.0, 2.0), (3.0, 4.0)]), None);
        assert_eq!(paired_t(&[(1.0, 1.0), (3.0, 3.0)]).unwrap().p, 1.0);
        assert_eq!(paired_t(&[(1.0, 2.0)]), None);
    }

    #[test]
    fn no_spread_and_different_means_is_no_test() {
        // Two runs a side with p99s in one histogram bucket each: 1.01 ms vs 1.02 ms.
        let a = Sample::of(&[1_010_000.0, 1_010_000.0]).unwrap();
        let b = Sample::of(&[1_020_000.0, 1_020_000.0]).unwrap();
        assert!(no_spread(&a, &b));
        assert_eq!(welch(&a, &b), None, "no p = 0, no zero-width interval");
        // The same values on both sides: no difference, p = 1.
        let w = welch(&a, &a).unwrap();
        assert_eq!((w.p, w.ci95_low, w.ci95_high), (1.0, 0.0, 0.0));
        assert!(!no_spread(&a, &a));
    }

    /// Three runs of 10, 12 and 20 ops/s over 2, 3 and 4 W: 42 / 9 = 4.667 per W (the
    /// mean of the runs' ratios is 5.0), z = (2/9, -6/9, 4/9), sd = sqrt(28) / 9.
    #[test]
    fn a_ratio_of_means_and_its_delta_method_spread() {
        let s = Sample::ratio_of_means(&[(10.0, 2.0), (12.0, 3.0), (20.0, 4.0)]).unwrap();
        assert_eq!(s.n, 3);
        assert!((s.mean - 14.0 / 3.0).abs() < 1e-12, "{}", s.mean);
        assert!(
            (s.sd.unwrap() - 28f64.sqrt() / 9.0).abs() < 1e-12,
            "{:?}",
            s.sd
        );
        // With the same watts in every pair it is the throughput's sample over those watts.
        let t = [10.0, 12.0, 20.0];
        let pairs: Vec<(f64, f64)> = t.iter().map(|t| (*t, 4.0)).collect();
        let s = Sample::ratio_of_means(&pairs).unwrap();
        let of = Sample::of(&t).unwrap();
        assert!((s.mean - of.mean / 4.0).abs() < 1e-12);
        assert!((s.sd.unwrap() - of.sd.unwrap() / 4.0).abs() < 1e-12);
        // One pair: its ratio, no spread; none without pairs or watts.
        let one = Sample::ratio_of_means(&[(10.0, 4.0)]).unwrap();
        assert_eq!((one.n, one.mean, one.sd), (1, 2.5, None));
        assert_eq!(Sample::ratio_of_means(&[]), None);
        assert_eq!(Sample::ratio_of_means(&[(10.0, 0.0)]), None);
    }

    #[test]
    fn means() {
        assert_eq!(mean(&[]), None);
        assert!((geomean(&[3478470.0, 3474360.0, 31619580.0]).unwrap() - 7256709.29).abs() < 0.01);
        assert!((mean(&[45.2, 43.9, 60.6]).unwrap() - 49.9).abs() < 1e-9);
        assert_eq!(geomean(&[1.0, 0.0]), None);
        assert_eq!(stdev(&[1.0]), None);
    }
}
