//! PARSEC 3.0 blackscholes: prices a portfolio of European options with the
//! Black-Scholes closed form, over and over, on contiguous chunks per thread.
//!
//! ```text
//!   optionData.txt (1000 base options, embedded)
//!        │ row i = base option i mod 1000        (PARSEC's inputgen.c)
//!        ▼
//!   Portfolio (struct of arrays, like PARSEC) ──split into contiguous ranges──┐
//!                                                                            ▼
//!   thread "blackscholes-t": for run in 0..runs, for each chunk of 256 options
//!        price every option (CNDF polynomial, BlkSchlsEqEuroNoDiv)
//!        └► work_done(options in the chunk)
//!        ▼
//!   prices of the last run, in option order ─► Report { max_abs_error vs the
//!                                               DerivaGem reference, checksum }
//! ```
//!
//! # What it models
//!
//! The `blackscholes` application of the PARSEC benchmark suite (Bienia et
//! al., "The PARSEC Benchmark Suite: Characterization and Architectural
//! Implications", PACT 2008), one of the four applications of the PaRLSched
//! paper's experiments (§VI.A, "BLA"): a regular, compute-bound data-parallel
//! loop. Each thread prices its contiguous share of the options `runs` times
//! (PARSEC's `NUM_RUNS`), writing the prices to its share of the output array,
//! exactly as PARSEC's pthreads version does. Prices are computed in double
//! precision (PARSEC's default `fptype` is `float`); the formula and the
//! 5-term polynomial approximation of the normal CDF are PARSEC's.
//!
//! # Options
//!
//! - `--input in_4|in_16|in_4K|in_16K|in_64K|in_10M`: PARSEC's input sizes
//!   (test, simdev, simsmall, simmedium, simlarge, native). Default `in_64K`.
//! - `--options N`: any other portfolio size, generated the same way.
//! - `--runs N`: how many times every option is priced (PARSEC: 100). The
//!   default, 3000, makes the default run last a few seconds on 2 cores.
//!
//! Options are split over `--threads` in contiguous ranges; unlike PARSEC,
//! which drops the remainder when the option count is not a multiple of the
//! thread count, the first `options % threads` threads take one option more.
//!
//! # Data
//!
//! Only PARSEC's `optionData.txt` (the 1000 base options with their
//! DerivaGem reference prices) is embedded, from `data/parsec/`. PARSEC's
//! input files `in_N.txt` are made by its `inputgen.c`, which writes row `i`
//! as base option `i mod 1000`; this module builds the portfolio the same way.
//! The tests check that the generated rows, printed in inputgen's format,
//! equal PARSEC's `in_4K.txt` byte for byte (embedded for the test only); the
//! same comparison was made once by hand against PARSEC's `in_4.txt`,
//! `in_16.txt`, `in_16K.txt` and `in_64K.txt` (all identical).
//!
//! # Correctness
//!
//! Every price is compared with the reference price of its row: the report's
//! `max_abs_error` is the largest difference (PARSEC's `ERR_CHK` tolerance is
//! 1e-4; the tests assert it for all 1000 base options and the full in_64K
//! portfolio). The `checksum` (sum of all prices) does not depend on the
//! thread count.

use crate::common::{Common, WorkError};

/// PARSEC's 1000 base options, as shipped in its source tree.
const OPTION_DATA: &str = include_str!("../data/parsec/optionData.txt");

/// Number of options priced between two progress reports.
const CHUNK: usize = 256;

/// PARSEC's input sizes (`inputs/input_*.tar` of the blackscholes package).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputSize {
    /// 4 options (PARSEC "test").
    In4,
    /// 16 options (PARSEC "simdev").
    In16,
    /// 4096 options (PARSEC "simsmall").
    In4K,
    /// 16384 options (PARSEC "simmedium").
    In16K,
    /// 65536 options (PARSEC "simlarge").
    In64K,
    /// 10 000 000 options (PARSEC "native").
    In10M,
}

impl InputSize {
    /// Every size, smallest first.
    pub const ALL: [InputSize; 6] = [
        InputSize::In4,
        InputSize::In16,
        InputSize::In4K,
        InputSize::In16K,
        InputSize::In64K,
        InputSize::In10M,
    ];

    /// PARSEC's name of the input (`in_64K`).
    pub fn name(self) -> &'static str {
        match self {
            InputSize::In4 => "in_4",
            InputSize::In16 => "in_16",
            InputSize::In4K => "in_4K",
            InputSize::In16K => "in_16K",
            InputSize::In64K => "in_64K",
            InputSize::In10M => "in_10M",
        }
    }

    /// Number of options in PARSEC's file of this size.
    pub fn option_count(self) -> usize {
        match self {
            InputSize::In4 => 4,
            InputSize::In16 => 16,
            InputSize::In4K => 4096,
            InputSize::In16K => 16384,
            InputSize::In64K => 65536,
            InputSize::In10M => 10_000_000,
        }
    }
}

impl std::str::FromStr for InputSize {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        InputSize::ALL
            .into_iter()
            .find(|size| size.name() == text)
            .ok_or_else(|| {
                let names: Vec<&str> = InputSize::ALL.iter().map(|s| s.name()).collect();
                format!("unknown input size {text:?}: use one of {}", names.join(", "))
            })
    }
}

/// Options of the blackscholes workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// PARSEC input size to generate
    pub input: InputSize,
    /// Price this many options instead of a PARSEC input size
    pub options: Option<usize>,
    /// Times every option is priced (PARSEC's NUM_RUNS is 100)
    pub runs: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            input: InputSize::In64K,
            options: None,
            runs: 3000,
        }
    }
}

/// What a blackscholes run computed.
#[derive(serde::Serialize, Debug)]
pub struct Report {
    /// Options in the portfolio.
    pub options: usize,
    /// Times every option was priced.
    pub runs: u32,
    /// Largest |price - DerivaGem reference price| over the portfolio.
    pub max_abs_error: f64,
    /// Sum of the prices of the last run, in option order.
    pub checksum: f64,
}

/// Call or put.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OptionKind {
    Call,
    Put,
}

/// One row of `optionData.txt`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct OptionRow {
    spot: f64,
    strike: f64,
    rate: f64,
    /// Dividend rate (read, unused by the pricing, as in PARSEC).
    dividend_rate: f64,
    volatility: f64,
    /// Years to expiry.
    time: f64,
    kind: OptionKind,
    /// Dividend values (read, unused, as in PARSEC).
    dividends: f64,
    /// DerivaGem reference price.
    reference: f64,
}

/// The portfolio in PARSEC's struct-of-arrays layout.
struct Portfolio {
    spot: Vec<f64>,
    strike: Vec<f64>,
    rate: Vec<f64>,
    volatility: Vec<f64>,
    time: Vec<f64>,
    is_put: Vec<bool>,
    reference: Vec<f64>,
}

impl Portfolio {
    /// PARSEC's inputgen: row `i` is base option `i mod base.len()`.
    fn generate(base: &[OptionRow], count: usize) -> Portfolio {
        let rows = || (0..count).map(|i| &base[i % base.len()]);
        Portfolio {
            spot: rows().map(|o| o.spot).collect(),
            strike: rows().map(|o| o.strike).collect(),
            rate: rows().map(|o| o.rate).collect(),
            volatility: rows().map(|o| o.volatility).collect(),
            time: rows().map(|o| o.time).collect(),
            is_put: rows().map(|o| o.kind == OptionKind::Put).collect(),
            reference: rows().map(|o| o.reference).collect(),
        }
    }

    fn len(&self) -> usize {
        self.spot.len()
    }

    fn price(&self, i: usize) -> f64 {
        black_scholes_no_dividend(
            self.spot[i],
            self.strike[i],
            self.rate[i],
            self.volatility[i],
            self.time[i],
            self.is_put[i],
        )
    }
}

/// Parses the C initialiser rows `{S, K, r, q, v, T, "C", divs, ref},` of
/// PARSEC's `optionData.txt`; comment and blank lines are skipped.
fn parse_option_data(text: &str) -> Result<Vec<OptionRow>, WorkError> {
    let mut rows = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        let Some(body) = line.strip_prefix('{') else { continue };
        let bad = |what: &str| WorkError::BadInput(format!("optionData.txt line {}: {what}: {line}", number + 1));
        let body = body.trim_end_matches(',').trim_end_matches('}');
        let fields: Vec<&str> = body.split(',').map(str::trim).collect();
        if fields.len() != 9 {
            return Err(bad("expected 9 comma-separated fields"));
        }
        let num = |k: usize| fields[k].parse::<f64>().map_err(|_| bad("not a number"));
        let kind = match fields[6].trim_matches('"') {
            "C" => OptionKind::Call,
            "P" => OptionKind::Put,
            _ => return Err(bad("option type must be \"C\" or \"P\"")),
        };
        rows.push(OptionRow {
            spot: num(0)?,
            strike: num(1)?,
            rate: num(2)?,
            dividend_rate: num(3)?,
            volatility: num(4)?,
            time: num(5)?,
            kind,
            dividends: num(7)?,
            reference: num(8)?,
        });
    }
    if rows.is_empty() {
        return Err(WorkError::BadInput("optionData.txt holds no option rows".into()));
    }
    Ok(rows)
}

/// PARSEC's CNDF: the cumulative normal distribution by the 5-term polynomial
/// approximation (Abramowitz & Stegun 26.2.17).
fn cumulative_normal(x: f64) -> f64 {
    const INV_SQRT_2PI: f64 = 0.398_942_280_401_432_7;
    let negative = x < 0.0;
    let x = x.abs();
    let density = (-0.5 * x * x).exp() * INV_SQRT_2PI;
    let k = 1.0 / (1.0 + 0.231_641_9 * x);
    let k2 = k * k;
    let k3 = k2 * k;
    let k4 = k3 * k;
    let k5 = k4 * k;
    // Summed in PARSEC's order.
    let poly = k2 * -0.356_563_782 + k3 * 1.781_477_937 + k4 * -1.821_255_978 + k5 * 1.330_274_429 + k * 0.319_381_530;
    let upper = 1.0 - poly * density;
    if negative { 1.0 - upper } else { upper }
}

/// PARSEC's BlkSchlsEqEuroNoDiv: Black-Scholes price of a European option on
/// a non-dividend-paying stock.
fn black_scholes_no_dividend(spot: f64, strike: f64, rate: f64, volatility: f64, time: f64, is_put: bool) -> f64 {
    let sqrt_time = time.sqrt();
    let log_term = (spot / strike).ln();
    let power_term = volatility * volatility * 0.5;
    let den = volatility * sqrt_time;
    let d1 = ((rate + power_term) * time + log_term) / den;
    let d2 = d1 - den;
    let n_d1 = cumulative_normal(d1);
    let n_d2 = cumulative_normal(d2);
    let future_strike = strike * (-rate * time).exp();
    if is_put {
        future_strike * (1.0 - n_d2) - spot * (1.0 - n_d1)
    } else {
        spot * n_d1 - future_strike * n_d2
    }
}

/// Contiguous range of options of thread `thread` out of `threads`; the first
/// `count % threads` ranges hold one option more.
fn thread_range(count: usize, threads: usize, thread: usize) -> std::ops::Range<usize> {
    let base = count / threads;
    let extra = count % threads;
    let start = thread * base + thread.min(extra);
    let len = base + usize::from(thread < extra);
    start..start + len
}

/// Prices the whole portfolio `runs` times on `common.threads` threads and
/// returns the prices of the last run, in option order.
fn price_portfolio(portfolio: &Portfolio, runs: u32, common: &Common) -> Result<Vec<f64>, WorkError> {
    let per_thread = common.spawn_workers("blackscholes", |thread| {
        let range = thread_range(portfolio.len(), common.threads, thread);
        let mut prices = vec![0.0; range.len()];
        for _ in 0..runs {
            for (chunk_index, chunk) in prices.chunks_mut(CHUNK).enumerate() {
                let first = range.start + chunk_index * CHUNK;
                for (offset, price) in chunk.iter_mut().enumerate() {
                    *price = std::hint::black_box(portfolio.price(first + offset));
                }
                common.work_done(chunk.len() as u64);
            }
        }
        prices
    })?;
    Ok(per_thread.concat())
}

/// Runs the blackscholes workload.
pub fn run(opts: &Options, common: &Common) -> Result<Report, WorkError> {
    let count = opts.options.unwrap_or_else(|| opts.input.option_count());
    if count == 0 {
        return Err(WorkError::BadInput("--options must be at least 1".into()));
    }
    if opts.runs == 0 {
        return Err(WorkError::BadInput("--runs must be at least 1".into()));
    }
    let base = parse_option_data(OPTION_DATA)?;
    let portfolio = Portfolio::generate(&base, count);

    common.start("blackscholes: pricing options", count as u64 * u64::from(opts.runs));
    let prices = price_portfolio(&portfolio, opts.runs, common)?;
    common.finish();

    let max_abs_error = prices
        .iter()
        .zip(&portfolio.reference)
        .map(|(price, reference)| (price - reference).abs())
        .fold(0.0, f64::max);
    // PARSEC's ERR_CHK tolerance; NaN fails too.
    if max_abs_error.is_nan() || max_abs_error > 1e-4 {
        return Err(WorkError::WrongResult(format!(
            "a price differs from its reference by {max_abs_error:e} (PARSEC allows 1e-4)"
        )));
    }
    Ok(Report {
        options: count,
        runs: opts.runs,
        max_abs_error,
        checksum: prices.iter().sum(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PARSEC's in_4K.txt, embedded for the generator test only.
    const PARSEC_IN_4K: &str = include_str!("../data/parsec/in_4K.txt");

    /// Prints a portfolio the way PARSEC's inputgen.c does
    /// (`"%.2f %.2f %.4f %.2f %.2f %.2f %c %.2f %.18f\n"`).
    fn inputgen_text(base: &[OptionRow], count: usize) -> String {
        let mut text = format!("{count}\n");
        for i in 0..count {
            let o = &base[i % base.len()];
            let kind = if o.kind == OptionKind::Put { 'P' } else { 'C' };
            text.push_str(&format!(
                "{:.2} {:.2} {:.4} {:.2} {:.2} {:.2} {} {:.2} {:.18}\n",
                o.spot, o.strike, o.rate, o.dividend_rate, o.volatility, o.time, kind, o.dividends, o.reference
            ));
        }
        text
    }

    fn base() -> Vec<OptionRow> {
        parse_option_data(OPTION_DATA).expect("embedded optionData.txt parses")
    }

    fn common(threads: usize) -> Common {
        Common::new(threads, 1, true).expect("valid settings")
    }

    #[test]
    fn input_sizes_parse_by_parsec_name() {
        for size in InputSize::ALL {
            assert_eq!(size.name().parse::<InputSize>(), Ok(size));
        }
        assert_eq!(Options::default().input.option_count(), 65536);
        assert!("in_5K".parse::<InputSize>().unwrap_err().contains("in_64K"));
    }

    #[test]
    fn option_data_holds_parsecs_1000_base_options() {
        let base = base();
        assert_eq!(base.len(), 1000);
        assert_eq!(base[0].kind, OptionKind::Call);
        assert_eq!(base[1].kind, OptionKind::Put);
        assert_eq!(
            base[0].reference,
            "4.759423036851750000".parse::<f64>().expect("number")
        );
        assert_eq!((base[999].spot, base[999].strike, base[999].time), (100.0, 110.0, 1.0));
    }

    #[test]
    fn generated_in_4k_equals_parsecs_file_byte_for_byte() {
        let generated = inputgen_text(&base(), 4096);
        assert_eq!(generated.lines().count(), PARSEC_IN_4K.lines().count());
        for (number, (ours, parsec)) in generated.lines().zip(PARSEC_IN_4K.lines()).enumerate() {
            assert_eq!(ours, parsec, "line {} differs", number + 1);
        }
        assert_eq!(generated, PARSEC_IN_4K);
    }

    #[test]
    fn every_base_option_is_within_parsecs_tolerance_of_its_reference() {
        for (i, o) in base().iter().enumerate() {
            let price = black_scholes_no_dividend(
                o.spot,
                o.strike,
                o.rate,
                o.volatility,
                o.time,
                o.kind == OptionKind::Put,
            );
            assert!(
                (price - o.reference).abs() < 1e-4,
                "option {i}: price {price}, reference {}",
                o.reference
            );
        }
    }

    #[test]
    fn in_64k_run_is_within_tolerance_everywhere() {
        let opts = Options {
            input: InputSize::In64K,
            options: None,
            runs: 1,
        };
        let report = run(&opts, &common(2)).expect("runs");
        assert_eq!(report.options, 65536);
        assert!(report.max_abs_error < 1e-4, "max error {}", report.max_abs_error);
        assert!(report.checksum.is_finite() && report.checksum > 0.0);
    }

    #[test]
    fn cumulative_normal_matches_known_values() {
        assert!((cumulative_normal(0.0) - 0.5).abs() < 1e-7);
        assert!((cumulative_normal(1.0) - 0.841_344_746).abs() < 1e-7);
        assert!((cumulative_normal(-1.96) - 0.024_997_895).abs() < 1e-7);
        assert!((cumulative_normal(3.0) + cumulative_normal(-3.0) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn ranges_cover_every_option_once_whatever_the_thread_count() {
        for count in [1, 7, 256, 1000, 4099] {
            for threads in 1..=9 {
                let ranges: Vec<_> = (0..threads).map(|t| thread_range(count, threads, t)).collect();
                assert_eq!(ranges[0].start, 0);
                assert_eq!(ranges[threads - 1].end, count);
                for pair in ranges.windows(2) {
                    assert_eq!(pair[0].end, pair[1].start);
                    assert!(pair[0].len() >= pair[1].len() && pair[0].len() <= pair[1].len() + 1);
                }
            }
        }
    }

    #[test]
    fn prices_do_not_depend_on_the_thread_count() {
        let base = base();
        let portfolio = Portfolio::generate(&base, 1000 + CHUNK + 3);
        let one = price_portfolio(&portfolio, 2, &common(1)).expect("runs");
        for threads in [2, 3, 5] {
            let many = price_portfolio(&portfolio, 2, &common(threads)).expect("runs");
            assert_eq!(one, many, "{threads} threads");
        }
        let direct: Vec<f64> = (0..portfolio.len()).map(|i| portfolio.price(i)).collect();
        assert_eq!(one, direct);
    }

    #[test]
    fn rejects_empty_work() {
        let zero_options = Options {
            input: InputSize::In4,
            options: Some(0),
            runs: 1,
        };
        assert!(matches!(run(&zero_options, &common(1)), Err(WorkError::BadInput(_))));
        let zero_runs = Options {
            input: InputSize::In4,
            options: None,
            runs: 0,
        };
        assert!(matches!(run(&zero_runs, &common(1)), Err(WorkError::BadInput(_))));
    }
}
