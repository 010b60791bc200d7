//! Summary statistics of a sample (completion times of repeated runs):
//! values ─► drop non-finite ─► sort ─► n, mean, median, sample deviation,
//! min, max; and a distribution-free confidence interval of the median
//! (two order statistics, ranks from the binomial distribution), used on the
//! per-repeat ratios of interleaved runs.

/// Summary of a sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub n: usize,
    pub mean: f64,
    /// Middle value; the mean of the two middle values when `n` is even.
    pub median: f64,
    /// Sample standard deviation (divides by n - 1); 0 when n = 1.
    pub dev: f64,
    pub min: f64,
    pub max: f64,
}

/// The statistics of the finite values of `values`; `None` when there are
/// none (empty input, or only NaN and infinities).
pub fn stats(values: &[f64]) -> Option<Stats> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let mean = sorted.iter().sum::<f64>() / n as f64;
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    let dev = if n > 1 {
        (sorted.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    Some(Stats {
        n,
        mean,
        median,
        dev,
        min: sorted[0],
        max: sorted[n - 1],
    })
}

/// A confidence interval of a sample's median.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MedianInterval {
    pub low: f64,
    pub high: f64,
    /// The interval's actual coverage: at least the level asked for, or the
    /// most a sample this small gives (1 - 2^(1-n), for min..max).
    pub level: f64,
}

/// The distribution-free interval of the median of the finite `values` at
/// `confidence` (e.g. 0.95): the k-th smallest and k-th largest values, with
/// k the largest rank whose binomial tail 2 P(B(n, 1/2) < k) stays within
/// 1 - confidence. Samples too small for that give min..max and say their
/// lower level. `None` without finite values.
pub fn median_interval(values: &[f64], confidence: f64) -> Option<MedianInterval> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    // P(B <= j) for B ~ Binomial(n, 1/2), terms summed from log space so
    // large n does not underflow.
    let mut ln_term = -(n as f64) * std::f64::consts::LN_2;
    let mut cdf = Vec::with_capacity(n.div_ceil(2) + 1);
    let mut sum = 0.0;
    for j in 0..=n.div_ceil(2) {
        sum += ln_term.exp();
        cdf.push(sum);
        ln_term += ((n - j) as f64).ln() - ((j + 1) as f64).ln();
    }
    let mut k = 1;
    while k < n.div_ceil(2) && 2.0 * cdf[k] <= 1.0 - confidence {
        k += 1;
    }
    Some(MedianInterval {
        low: sorted[k - 1],
        high: sorted[n - k],
        level: (1.0 - 2.0 * cdf[k - 1]).max(0.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn odd_sample_matches_hand_computed_values() {
        // mean 20/5 = 4; sorted 1,2,3,4,10 -> median 3;
        // squares 9+4+1+0+36 = 50, / 4 = 12.5.
        let s = stats(&[4.0, 10.0, 1.0, 3.0, 2.0]).expect("non-empty");
        assert_eq!(s.n, 5);
        assert!(close(s.mean, 4.0));
        assert!(close(s.median, 3.0));
        assert!(close(s.dev, 12.5f64.sqrt()));
        assert_eq!((s.min, s.max), (1.0, 10.0));
    }

    #[test]
    fn even_sample_takes_the_mean_of_the_middle_pair() {
        // mean 2.5, median (2+3)/2, squares 2.25+0.25+0.25+2.25 = 5, / 3.
        let s = stats(&[3.0, 1.0, 4.0, 2.0]).expect("non-empty");
        assert!(close(s.median, 2.5));
        assert!(close(s.mean, 2.5));
        assert!(close(s.dev, (5.0f64 / 3.0).sqrt()));
    }

    #[test]
    fn one_value_has_no_spread_and_empty_input_has_no_stats() {
        let s = stats(&[7.5]).expect("non-empty");
        assert_eq!(
            (s.n, s.mean, s.median, s.dev, s.min, s.max),
            (1, 7.5, 7.5, 0.0, 7.5, 7.5)
        );
        assert_eq!(stats(&[]), None);
        assert_eq!(stats(&[f64::NAN, f64::INFINITY]), None);
    }

    #[test]
    fn median_interval_ranks_follow_the_binomial_tails() {
        // n = 10: 2 P(B <= 1) = 2 * 11/1024 = 0.0215 <= 0.05 but
        // 2 P(B <= 2) = 2 * 56/1024 = 0.109: ranks 2 and 9.
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        let ci = median_interval(&ten, 0.95).expect("values");
        assert_eq!((ci.low, ci.high), (2.0, 9.0));
        assert!(close(ci.level, 1.0 - 22.0 / 1024.0));
        // n = 15: 2 P(B <= 3) = 2 * 576/32768 = 0.035, 2 P(B <= 4) = 0.118:
        // ranks 4 and 12.
        let fifteen: Vec<f64> = (1..=15).rev().map(f64::from).collect();
        let ci = median_interval(&fifteen, 0.95).expect("values");
        assert_eq!((ci.low, ci.high), (4.0, 12.0));
        assert!(close(ci.level, 1.0 - 1152.0 / 32768.0));
        // n = 5 cannot reach 95%: min..max, which covers 1 - 2/32.
        let ci = median_interval(&[5.0, 1.0, 3.0, 2.0, 4.0], 0.95).expect("values");
        assert_eq!((ci.low, ci.high), (1.0, 5.0));
        assert!(close(ci.level, 0.9375));
        assert_eq!(median_interval(&[f64::NAN], 0.95), None);
        let one = median_interval(&[2.0], 0.95).expect("one value");
        assert_eq!((one.low, one.high, one.level), (2.0, 2.0, 0.0));
        // Large samples do not underflow: n = 2000 gives ranks near
        // n/2 -+ 1.96 sqrt(n)/2 = 1000 -+ 44.
        let many: Vec<f64> = (1..=2000).map(f64::from).collect();
        let ci = median_interval(&many, 0.95).expect("values");
        assert!((950.0..=960.0).contains(&ci.low), "{ci:?}");
        assert!(ci.level >= 0.95 && ci.level < 0.96, "{ci:?}");
    }

    #[test]
    fn non_finite_values_are_left_out() {
        let s = stats(&[1.0, f64::NAN, 3.0]).expect("two finite values");
        assert_eq!(s.n, 2);
        assert!(close(s.mean, 2.0));
    }
}
