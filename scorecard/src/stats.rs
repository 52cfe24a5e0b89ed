//! The arithmetic of the scorecard: rates, the Wilson score interval, and
//! nearest-rank percentiles.

use std::cmp::Ordering;

/// The normal quantile for a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// A 95% confidence interval for a proportion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Lower bound, in [0, 1].
    pub low: f64,
    /// Upper bound, in [0, 1].
    pub high: f64,
}

/// `hits ÷ n`, or `None` when `n` is 0 (a rate with nothing to count is
/// unknown, not zero).
pub fn ratio(hits: u64, n: u64) -> Option<f64> {
    (n > 0).then(|| hits as f64 / n as f64)
}

/// The Wilson score interval at 95% for `hits` of `n`; `None` when `n` is 0.
///
/// Unlike the normal approximation it stays inside [0, 1] and is honest at
/// 0 and n: 0 of 10 gives [0, 0.2775], 10 of 10 gives [0.7225, 1].
pub fn wilson(hits: u64, n: u64) -> Option<Interval> {
    if n == 0 {
        return None;
    }
    let hits = hits.min(n);
    let (k, n_f) = (hits as f64, n as f64);
    let p = k / n_f;
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / n_f;
    let centre = (p + z2 / (2.0 * n_f)) / denom;
    let half = Z95 * (p * (1.0 - p) / n_f + z2 / (4.0 * n_f * n_f)).sqrt() / denom;
    // At the edges the bound is exact; rounding must not move it off 0 or 1.
    let low = if hits == 0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let high = if hits == n {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    Some(Interval { low, high })
}

/// The nearest-rank percentile: the value at 1-based rank ⌈percent/100 · n⌉
/// of the sorted values, so the answer is always an observed value; the
/// median is `percentile(v, 50)` (the lower middle for an even count).
/// `None` for no values. Reorders `values`.
pub fn percentile<T: Copy>(
    values: &mut [T],
    percent: u32,
    cmp: impl FnMut(&T, &T) -> Ordering,
) -> Option<T> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    // Integer arithmetic: 0.9 · n in floating point can land a hair above n.
    let rank = (u128::from(percent.min(100)) * n as u128).div_ceil(100);
    let index = usize::try_from(rank).unwrap_or(n).clamp(1, n) - 1;
    let (_, v, _) = values.select_nth_unstable_by(index, cmp);
    Some(*v)
}

/// Median, 90th percentile and total of a set of values.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Spread<T> {
    /// The median (nearest rank), `None` with no values.
    pub median: Option<T>,
    /// The 90th percentile (nearest rank), `None` with no values.
    pub p90: Option<T>,
    /// The sum.
    pub total: T,
    /// How many values.
    pub count: u64,
}

/// The spread of costs.
pub fn cost_spread(values: &mut [f64]) -> Spread<f64> {
    Spread {
        median: percentile(values, 50, f64::total_cmp),
        p90: percentile(values, 90, f64::total_cmp),
        total: values.iter().sum(),
        count: values.len() as u64,
    }
}

/// The spread of token counts.
pub fn count_spread(values: &mut [u64]) -> Spread<u64> {
    Spread {
        median: percentile(values, 50, u64::cmp),
        p90: percentile(values, 90, u64::cmp),
        total: values.iter().sum(),
        count: values.len() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-5
    }

    #[test]
    fn wilson_known_values() {
        // (hits, n, low, high): the edges from the closed form z²/(n+z²),
        // the middle values from R's prop.test(correct = FALSE) / statsmodels.
        let cases = [
            (0, 10, 0.0, 0.2775),
            (10, 10, 0.7225, 1.0),
            (0, 1, 0.0, 0.7935),
            (1, 1, 0.2065, 1.0),
            (1, 2, 0.0945, 0.9055),
            (5, 10, 0.2366, 0.7634),
            (1, 10, 0.0179, 0.4042),
            (3, 100, 0.0103, 0.0845),
        ];
        for (k, n, low, high) in cases {
            let i = wilson(k, n).unwrap();
            assert!(
                close(i.low, low) && close(i.high, high),
                "{k}/{n}: got [{}, {}], want [{low}, {high}]",
                i.low,
                i.high
            );
        }
        assert_eq!(wilson(0, 0), None);
        let edge = wilson(0, 7).unwrap();
        assert_eq!(edge.low.to_bits(), 0.0f64.to_bits());
        assert_eq!(wilson(7, 7).unwrap().high.to_bits(), 1.0f64.to_bits());
    }

    #[test]
    fn ratios() {
        assert_eq!(ratio(0, 0), None);
        assert_eq!(ratio(0, 4), Some(0.0));
        assert_eq!(ratio(1, 4), Some(0.25));
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let cases: [(&[u64], u32, Option<u64>); 9] = [
            (&[], 50, None),
            (&[7], 50, Some(7)),
            (&[7], 90, Some(7)),
            (&[4, 1, 3, 2], 50, Some(2)),
            (&[5, 1, 4, 2, 3], 50, Some(3)),
            (&[10, 9, 8, 7, 6, 5, 4, 3, 2, 1], 90, Some(9)),
            (&[10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 11], 90, Some(10)),
            (&[3, 1, 2], 100, Some(3)),
            (&[3, 1, 2], 0, Some(1)),
        ];
        for (values, p, want) in cases {
            let mut v = values.to_vec();
            assert_eq!(percentile(&mut v, p, u64::cmp), want, "{values:?} p{p}");
        }
        // 90% of 1000 is rank 900 exactly, not 901.
        let mut v: Vec<u64> = (1..=1000).rev().collect();
        assert_eq!(percentile(&mut v, 90, u64::cmp), Some(900));
        let mut costs = vec![0.5, 0.25, 1.0, 0.0];
        assert_eq!(
            cost_spread(&mut costs),
            Spread {
                median: Some(0.25),
                p90: Some(1.0),
                total: 1.75,
                count: 4
            }
        );
    }
}
