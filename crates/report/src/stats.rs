//! Summary statistics of a sample (completion times of repeated runs):
//! values ─► drop non-finite ─► sort ─► n, mean, median, sample deviation,
//! min, max.

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
    fn non_finite_values_are_left_out() {
        let s = stats(&[1.0, f64::NAN, 3.0]).expect("two finite values");
        assert_eq!(s.n, 2);
        assert!(close(s.mean, 2.0));
    }
}
