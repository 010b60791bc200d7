//! PARSEC 3.0 swaptions: prices a portfolio of swaptions by Monte Carlo
//! simulation of the Heath-Jarrow-Morton (HJM) interest-rate model, one
//! contiguous block of swaptions per thread.
//!
//! ```text
//!   seed ─► Park-Miller stream ─► per-swaption seed base, then for each swaption
//!                                 its horizon (5..19.75 y) and strike (0.1..5.0)
//!   portfolio ──split into contiguous blocks──┐
//!                                             ▼
//!   thread "swaptions-t": for each of its swaptions (seed = base + index),
//!       for each block of 16 paths:
//!          480 uniforms ─► Moro inverse normal ─► 3-factor HJM forward-curve paths
//!          ─► discount factors ─► discounted payoff max(fixed leg - 1, 0)
//!          └► work_done(1)
//!       ─► mean price and standard error
//!        ▼
//!   Report { prices in portfolio order, mean_price }
//! ```
//!
//! # What it models
//!
//! The `swaptions` application of the PARSEC benchmark suite (Bienia et al.,
//! PACT 2008; HJM code by Mark Broadie and Jatin Dewanwala), one of the four
//! applications of the PaRLSched paper's experiments (§VI.A, "SWA"): regular
//! task sizes, little communication. This is a Rust rewrite of PARSEC's
//! `HJM_Securities.cpp` (portfolio and threading), `HJM_Swaption_Blocking.cpp`
//! (pricing loop), `HJM_SimPath_Forward_Blocking.cpp` (path generation),
//! `HJM.cpp` (forward curve, drifts, discount factors), `RanUnif.c`
//! (Park-Miller minimal standard generator) and `CumNormalInv.c` (Moro's
//! inverse normal), with PARSEC's constants: 11 time steps, 3 factors with
//! PARSEC's fixed factor-volatility table, a yield curve from 10% rising by
//! 0.5% a step, swaption maturity 1 year, swap tenor 2 years, yearly
//! payments, continuously compounded strikes, blocks of 16 paths.
//!
//! PARSEC's payoff is `max(fixed leg - 1, 0)`: the holder receives the fixed
//! coupons, so these are receiver swaptions and a swaption's price *rises*
//! with its strike.
//!
//! The portfolio is PARSEC's: one Park-Miller stream started at the seed
//! (PARSEC's default 1979, `--seed` of the common options) first gives the
//! base of the per-swaption seeds, `floor((2^31 - 1) · u)`, then for each
//! swaption its horizon `5 + 0.25 · floor(60 u)` years (PARSEC's `dYears`,
//! over which the 11 steps are spread) and its strike `0.1 + 0.1 ·
//! floor(49 u)`. Swaption `i` is simulated from seed `base + i`, so prices
//! depend only on the seed, never on the thread count. Seeds outside
//! Park-Miller's range 1..2^31-2 are reduced modulo 2^31 - 1 (0 becomes 1).
//!
//! Deviations from PARSEC: the number of simulations is rounded up to whole
//! blocks of 16 and the mean is taken over the paths actually simulated
//! (PARSEC simulates whole blocks but divides by the requested count, which
//! inflates prices when it is not a multiple of 16, e.g. its "test" preset);
//! a variance that rounding makes slightly negative gives a standard error of
//! 0 instead of NaN.
//!
//! # Options
//!
//! - `--preset test|simsmall|simmedium|simlarge|native`: PARSEC's input sets
//!   (swaptions / simulations) 1/5, 16/10000, 32/20000, 64/40000,
//!   128/1000000. Without a preset: 64 swaptions (simlarge's portfolio)
//!   with 200000 simulations each, a few seconds on 2 cores (simlarge
//!   itself takes about 0.6 s there).
//! - `--swaptions N`, `--simulations M`: override the preset's values.
//!
//! Swaptions are split over `--threads` in contiguous blocks, the first
//! `swaptions % threads` threads taking one more (PARSEC's pthreads
//! partition); like PARSEC, more threads than swaptions is refused.
//!
//! # Data
//!
//! None: everything is generated from the seed, as in PARSEC.
//!
//! # Correctness
//!
//! The tests check the Park-Miller generator against Park and Miller's
//! published check value, the inverse normal against known quantiles, that
//! prices are identical for 1, 2 and 3 threads, that with common random
//! numbers a price rises with the strike, that the standard error roughly
//! halves when the simulations quadruple, and that prices are positive and
//! finite.

use crate::common::{Common, WorkError};

/// HJM time steps (PARSEC's `iN`).
const STEPS: usize = 11;
/// HJM factors (PARSEC's `iFactors`).
const FACTORS: usize = 3;
/// Paths simulated together (PARSEC's `BLOCK_SIZE`).
const BLOCK: usize = 16;
/// Park-Miller modulus 2^31 - 1.
const PARK_MILLER_MODULUS: i64 = 2_147_483_647;

/// PARSEC's factor volatilities for the maturities 1..STEPS-1 (one row a factor).
const FACTOR_VOLATILITIES: [[f64; STEPS - 1]; FACTORS] = [
    [0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01],
    [
        0.009048, 0.008187, 0.007408, 0.006703, 0.006065, 0.005488, 0.004966, 0.004493, 0.004066, 0.003679,
    ],
    [
        0.001000, 0.000750, 0.000500, 0.000250, 0.000000, -0.000250, -0.000500, -0.000750, -0.001000, -0.001250,
    ],
];

/// Swaptions and simulations when no preset is given: simlarge's portfolio
/// with 5 times its simulations, a few seconds on 2 cores.
const DEFAULT_SIZE: (usize, u64) = (64, 200_000);

/// PARSEC's input sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// 1 swaption, 5 simulations.
    Test,
    /// 16 swaptions, 10 000 simulations.
    Simsmall,
    /// 32 swaptions, 20 000 simulations.
    Simmedium,
    /// 64 swaptions, 40 000 simulations.
    Simlarge,
    /// 128 swaptions, 1 000 000 simulations.
    Native,
}

impl std::str::FromStr for Preset {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Preset::ALL.into_iter().find(|p| p.name() == text).ok_or_else(|| {
            let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
            format!("unknown preset {text:?}: use one of {}", names.join(", "))
        })
    }
}

impl Preset {
    /// Every input set, smallest first.
    pub const ALL: [Preset; 5] = [
        Preset::Test,
        Preset::Simsmall,
        Preset::Simmedium,
        Preset::Simlarge,
        Preset::Native,
    ];

    /// PARSEC's name of the input set.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Test => "test",
            Preset::Simsmall => "simsmall",
            Preset::Simmedium => "simmedium",
            Preset::Simlarge => "simlarge",
            Preset::Native => "native",
        }
    }

    /// (swaptions, simulations per swaption).
    pub fn size(self) -> (usize, u64) {
        match self {
            Preset::Test => (1, 5),
            Preset::Simsmall => (16, 10_000),
            Preset::Simmedium => (32, 20_000),
            Preset::Simlarge => (64, 40_000),
            Preset::Native => (128, 1_000_000),
        }
    }
}

/// Options of the swaptions workload.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    /// PARSEC input set [default: 64 swaptions, 200000 simulations]
    pub preset: Option<Preset>,
    /// Number of swaptions (overrides the preset)
    pub swaptions: Option<usize>,
    /// Monte Carlo paths per swaption, rounded up to blocks of 16 (overrides the preset)
    pub simulations: Option<u64>,
}

/// The simulated price of one swaption of the portfolio.
#[derive(serde::Serialize, Debug, Clone, PartialEq)]
pub struct SwaptionPrice {
    /// Continuously compounded strike rate.
    pub strike: f64,
    /// Horizon in years over which the HJM steps are spread (PARSEC's dYears).
    pub years: f64,
    /// Monte Carlo mean of the discounted payoff.
    pub price: f64,
    /// Standard error of that mean.
    pub std_error: f64,
}

/// What a swaptions run computed.
#[derive(serde::Serialize, Debug)]
pub struct Report {
    /// Swaptions priced.
    pub swaptions: usize,
    /// Paths simulated per swaption (the request rounded up to blocks of 16).
    pub simulations: u64,
    /// One price per swaption, in portfolio order.
    pub prices: Vec<SwaptionPrice>,
    /// Mean of the prices.
    pub mean_price: f64,
}

/// PARSEC's `RanUnif`: the Park-Miller minimal standard generator
/// (multiplier 16807, Schrage's factorisation).
#[derive(Debug, Clone)]
struct ParkMiller {
    state: i64,
}

impl ParkMiller {
    /// Starts at `seed`, reduced into 1..2^31-2 (PARSEC's seeds already are).
    fn new(seed: u64) -> Self {
        let state = (seed % PARK_MILLER_MODULUS as u64) as i64;
        ParkMiller {
            state: if state == 0 { 1 } else { state },
        }
    }

    fn next_uniform(&mut self) -> f64 {
        let k1 = self.state / 127_773;
        let mut next = 16_807 * (self.state - k1 * 127_773) - k1 * 2_836;
        if next < 0 {
            next += PARK_MILLER_MODULUS;
        }
        self.state = next;
        next as f64 * 4.656_612_875e-10
    }
}

/// PARSEC's `CumNormalInv`: Moro's (1995) inverse of the standard normal CDF.
fn cumulative_normal_inverse(u: f64) -> f64 {
    const A: [f64; 4] = [2.50662823884, -18.61500062529, 41.39119773534, -25.44106049637];
    const B: [f64; 4] = [-8.47351093090, 23.08336743743, -21.06224101826, 3.13082909833];
    const C: [f64; 9] = [
        0.3374754822726147,
        0.9761690190917186,
        0.1607979714918209,
        0.0276438810333863,
        0.0038405729373609,
        0.0003951896511919,
        0.0000321767881768,
        0.0000002888167364,
        0.0000003960315187,
    ];
    let x = u - 0.5;
    if x.abs() < 0.42 {
        let r = x * x;
        return x * (((A[3] * r + A[2]) * r + A[1]) * r + A[0])
            / ((((B[3] * r + B[2]) * r + B[1]) * r + B[0]) * r + 1.0);
    }
    let tail = if x > 0.0 { 1.0 - u } else { u };
    let r = (-tail.ln()).ln();
    let r = C[0] + r * (C[1] + r * (C[2] + r * (C[3] + r * (C[4] + r * (C[5] + r * (C[6] + r * (C[7] + r * C[8])))))));
    if x < 0.0 { -r } else { r }
}

/// One swaption of the portfolio (PARSEC's `parm`, minus the fields that are
/// the same for all: steps, factors, yield curve, factor volatilities).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Swaption {
    /// Continuously compounded strike rate.
    strike: f64,
    /// Years to the swaption's expiry.
    maturity: f64,
    /// Years the underlying swap runs.
    tenor: f64,
    /// Years between swap payments.
    payment_interval: f64,
    /// Horizon spread over the STEPS time steps (PARSEC's dYears).
    years: f64,
}

/// The portfolio and the per-swaption seed base, drawn as PARSEC's main() does.
fn parsec_portfolio(seed: u64, count: usize) -> (u64, Vec<Swaption>) {
    let mut stream = ParkMiller::new(seed);
    let seed_base = (PARK_MILLER_MODULUS as f64 * stream.next_uniform()) as u64;
    let swaptions = (0..count)
        .map(|_| {
            let years = 5.0 + f64::from((60.0 * stream.next_uniform()) as i32) * 0.25;
            let strike = 0.1 + f64::from((49.0 * stream.next_uniform()) as i32) * 0.1;
            Swaption {
                strike,
                maturity: 1.0,
                tenor: 2.0,
                payment_interval: 1.0,
                years,
            }
        })
        .collect();
    (seed_base, swaptions)
}

/// PARSEC's `Discount_Factors_Blocking`: `factors[i·BLOCK + b]` is the
/// discount factor to step `i` along rate path `b` (rates at `i·BLOCK + b`).
fn discount_factors(factors: &mut [f64], steps: usize, years: f64, rates: &[f64], exps: &mut [f64]) {
    let dt = years / steps as f64;
    let exps = &mut exps[..(steps - 1) * BLOCK];
    for (e, rate) in exps.iter_mut().zip(rates) {
        *e = (-rate * dt).exp();
    }
    factors[..steps * BLOCK].fill(1.0);
    for i in 1..steps {
        for b in 0..BLOCK {
            for j in 0..i {
                factors[i * BLOCK + b] *= exps[j * BLOCK + b];
            }
        }
    }
}

/// Buffers of one block of paths, laid out as in PARSEC (`[step][maturity·BLOCK + path]`).
struct BlockBuffers {
    normals: [[f64; STEPS * BLOCK]; FACTORS],
    path: [[f64; STEPS * BLOCK]; STEPS],
    short_rates: [f64; STEPS * BLOCK],
    payoff_discounts: [f64; STEPS * BLOCK],
    swap_rates: [f64; STEPS * BLOCK],
    swap_discounts: [f64; STEPS * BLOCK],
    exps: [f64; STEPS * BLOCK],
}

/// Mean and standard error of the discounted payoff over `blocks` blocks of
/// 16 paths simulated from `seed`; `on_block` is called after each block.
fn price_swaption(swaption: &Swaption, seed: u64, blocks: u64, mut on_block: impl FnMut()) -> (f64, f64) {
    let dt = swaption.years / STEPS as f64;
    let sqrt_dt = dt.sqrt();
    // Step indices rounded as in PARSEC (`(int)(x + 0.5)`).
    let payment_ratio = (swaption.payment_interval / dt + 0.5) as usize;
    let swap_len = (STEPS as f64 - swaption.maturity / dt + 0.5) as usize;
    let swap_start = (swaption.maturity / dt + 0.5) as usize;
    let swap_points = (swaption.tenor / dt + 0.5) as usize;
    let swap_years = swap_len as f64 * dt;

    let mut swap_payoffs = vec![0.0; swap_len];
    for i in (payment_ratio.max(1)..=swap_points).step_by(payment_ratio.max(1)) {
        let coupon = (swaption.strike * swaption.payment_interval).exp();
        if let Some(payoff) = swap_payoffs.get_mut(i) {
            *payoff = if i == swap_points { coupon } else { coupon - 1.0 };
        }
    }

    // Forward curve from PARSEC's yield curve (10%, +0.5% a step).
    let mut yields = [0.0; STEPS];
    yields[0] = 0.1;
    for j in 1..STEPS {
        yields[j] = yields[j - 1] + 0.005;
    }
    let mut forward = [0.0; STEPS];
    forward[0] = yields[0];
    for i in 1..STEPS {
        forward[i] = (i + 1) as f64 * yields[i] - i as f64 * yields[i - 1];
    }

    // HJM drift corrections (PARSEC's HJM_Drifts), pre-multiplied by dt.
    let mut drifts = [[0.0; STEPS - 1]; FACTORS];
    for (factor, vols) in drifts.iter_mut().zip(&FACTOR_VOLATILITIES) {
        factor[0] = 0.5 * dt * vols[0] * vols[0];
        for j in 1..STEPS - 1 {
            let earlier: f64 = factor[..j].iter().sum();
            let sum_vol: f64 = vols[..=j].iter().sum();
            factor[j] = -earlier + 0.5 * dt * sum_vol * sum_vol;
        }
    }
    let mut drift_step = [0.0; STEPS - 1];
    for (l, step) in drift_step.iter_mut().enumerate() {
        *step = drifts.iter().map(|factor| factor[l]).sum::<f64>() * dt;
    }

    let mut rng = ParkMiller::new(seed);
    let mut buf = Box::new(BlockBuffers {
        normals: [[0.0; STEPS * BLOCK]; FACTORS],
        path: [[0.0; STEPS * BLOCK]; STEPS],
        short_rates: [0.0; STEPS * BLOCK],
        payoff_discounts: [0.0; STEPS * BLOCK],
        swap_rates: [0.0; STEPS * BLOCK],
        swap_discounts: [0.0; STEPS * BLOCK],
        exps: [0.0; STEPS * BLOCK],
    });
    let mut sum = 0.0;
    let mut sum_squares = 0.0;
    for _ in 0..blocks {
        // Shocks, drawn in PARSEC's order: path, step, factor.
        for b in 0..BLOCK {
            for j in 1..STEPS {
                for normals in buf.normals.iter_mut() {
                    normals[BLOCK * j + b] = cumulative_normal_inverse(rng.next_uniform());
                }
            }
        }
        // Forward-curve evolution: row j is the curve at step j, maturities 0..STEPS-j.
        for (maturity, rate) in buf.path[0].chunks_mut(BLOCK).zip(forward) {
            maturity.fill(rate);
        }
        for b in 0..BLOCK {
            for j in 1..STEPS {
                for l in 0..STEPS - j {
                    let mut shock = 0.0;
                    for (vols, normals) in FACTOR_VOLATILITIES.iter().zip(&buf.normals) {
                        shock += vols[l] * normals[BLOCK * j + b];
                    }
                    buf.path[j][BLOCK * l + b] = buf.path[j - 1][BLOCK * (l + 1) + b] + drift_step[l] + sqrt_dt * shock;
                }
            }
        }
        // Discounting along the short rate, and along the curve at expiry for the swap.
        for i in 0..STEPS {
            for b in 0..BLOCK {
                buf.short_rates[BLOCK * i + b] = buf.path[i][b];
            }
        }
        let BlockBuffers {
            path,
            short_rates,
            payoff_discounts,
            swap_rates,
            swap_discounts,
            exps,
            ..
        } = &mut *buf;
        discount_factors(payoff_discounts, STEPS, swaption.years, short_rates, exps);
        swap_rates[..swap_len * BLOCK].copy_from_slice(&path[swap_start][..swap_len * BLOCK]);
        discount_factors(swap_discounts, swap_len, swap_years, swap_rates, exps);

        for b in 0..BLOCK {
            let fixed_leg: f64 = swap_payoffs
                .iter()
                .enumerate()
                .map(|(i, payoff)| payoff * swap_discounts[i * BLOCK + b])
                .sum();
            let discounted = (fixed_leg - 1.0).max(0.0) * payoff_discounts[swap_start * BLOCK + b];
            sum += discounted;
            sum_squares += discounted * discounted;
        }
        on_block();
    }
    let paths = (blocks * BLOCK as u64) as f64;
    let mean = sum / paths;
    let variance = ((sum_squares - sum * sum / paths) / (paths - 1.0)).max(0.0);
    (mean, variance.sqrt() / paths.sqrt())
}

/// Contiguous block of swaptions of thread `thread` out of `threads`; the
/// first `count % threads` blocks hold one swaption more (PARSEC's partition).
fn thread_range(count: usize, threads: usize, thread: usize) -> std::ops::Range<usize> {
    let base = count / threads;
    let extra = count % threads;
    let start = thread * base + thread.min(extra);
    start..start + base + usize::from(thread < extra)
}

/// Runs the swaptions workload.
pub fn run(opts: &Options, common: &Common) -> Result<Report, WorkError> {
    let (preset_swaptions, preset_simulations) = opts.preset.map_or(DEFAULT_SIZE, Preset::size);
    let count = opts.swaptions.unwrap_or(preset_swaptions);
    let requested = opts.simulations.unwrap_or(preset_simulations);
    if count == 0 || requested == 0 {
        return Err(WorkError::BadInput(
            "--swaptions and --simulations must be at least 1".into(),
        ));
    }
    if common.threads > count {
        return Err(WorkError::BadInput(format!(
            "{} threads for {count} swaptions: each thread needs a swaption; raise --swaptions or use fewer --threads",
            common.threads
        )));
    }
    let blocks = requested.div_ceil(BLOCK as u64);
    let (seed_base, portfolio) = parsec_portfolio(common.seed, count);

    common.start("swaptions: simulating HJM paths (blocks of 16)", count as u64 * blocks);
    let per_thread = common.spawn_workers("swaptions", |thread| {
        thread_range(count, common.threads, thread)
            .map(|index| {
                let swaption = &portfolio[index];
                let (price, std_error) =
                    price_swaption(swaption, seed_base + index as u64, blocks, || common.work_done(1));
                SwaptionPrice {
                    strike: swaption.strike,
                    years: swaption.years,
                    price,
                    std_error,
                }
            })
            .collect::<Vec<_>>()
    })?;
    common.finish();

    let prices = per_thread.concat();
    // A swaption's price is the mean of discounted payoffs max(.., 0): never
    // negative, never NaN; so is its standard error.
    if let Some(bad) = prices
        .iter()
        .find(|p| !(p.price.is_finite() && p.price >= 0.0 && p.std_error.is_finite() && p.std_error >= 0.0))
    {
        return Err(WorkError::WrongResult(format!(
            "swaption (strike {}, {} years) priced {} with standard error {}",
            bad.strike, bad.years, bad.price, bad.std_error
        )));
    }
    let mean_price = prices.iter().map(|p| p.price).sum::<f64>() / count as f64;
    Ok(Report {
        swaptions: count,
        simulations: blocks * BLOCK as u64,
        prices,
        mean_price,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn common(threads: usize) -> Common {
        Common::new(threads, 1979, true).expect("valid settings")
    }

    fn with_strike(strike: f64) -> Swaption {
        Swaption {
            strike,
            maturity: 1.0,
            tenor: 2.0,
            payment_interval: 1.0,
            years: 5.5,
        }
    }

    #[test]
    fn presets_parse_by_name() {
        for preset in Preset::ALL {
            assert_eq!(preset.name().parse::<Preset>(), Ok(preset));
        }
        assert!("huge".parse::<Preset>().unwrap_err().contains("simlarge"));
    }

    #[test]
    fn park_miller_matches_the_published_check_value() {
        // Park & Miller (1988): from seed 1, the 10 000th value is 1043618065.
        let mut rng = ParkMiller::new(1);
        for _ in 0..10_000 {
            rng.next_uniform();
        }
        assert_eq!(rng.state, 1_043_618_065);
    }

    #[test]
    fn inverse_normal_matches_known_quantiles() {
        assert!(cumulative_normal_inverse(0.5).abs() < 1e-9);
        assert!((cumulative_normal_inverse(0.975) - 1.959_963_985).abs() < 1e-6);
        assert!((cumulative_normal_inverse(0.025) + 1.959_963_985).abs() < 1e-6);
        assert!((cumulative_normal_inverse(0.8) - 0.841_621_234).abs() < 1e-6);
        assert!((cumulative_normal_inverse(0.001) + 3.090_232_306).abs() < 1e-6);
    }

    #[test]
    fn portfolio_follows_parsecs_ranges() {
        let (seed_base, portfolio) = parsec_portfolio(1979, 128);
        assert!(seed_base > 0 && seed_base < PARK_MILLER_MODULUS as u64);
        for s in &portfolio {
            assert!((5.0..=19.75).contains(&s.years), "{s:?}");
            assert!(s.strike > 0.09 && s.strike < 5.0, "{s:?}");
            assert_eq!((s.years * 4.0).fract(), 0.0);
        }
        let distinct_years = portfolio
            .iter()
            .map(|s| (s.years * 4.0) as u32)
            .collect::<std::collections::BTreeSet<_>>();
        assert!(distinct_years.len() > 20, "the horizons should vary");
    }

    #[test]
    fn prices_are_identical_for_1_2_and_3_threads() {
        let opts = Options {
            preset: Some(Preset::Test),
            swaptions: Some(7),
            simulations: Some(320),
        };
        let one = run(&opts, &common(1)).expect("runs");
        for threads in [2, 3] {
            let many = run(&opts, &common(threads)).expect("runs");
            assert_eq!(one.prices, many.prices, "{threads} threads");
        }
        assert_eq!(one.prices.len(), 7);
        assert_eq!(one.simulations, 320);
    }

    #[test]
    fn prices_are_positive_and_finite() {
        let opts = Options {
            preset: Some(Preset::Simsmall),
            swaptions: Some(16),
            simulations: Some(160),
        };
        let report = run(&opts, &common(2)).expect("runs");
        for p in &report.prices {
            assert!(p.price.is_finite() && p.price > 0.0, "{p:?}");
            assert!(p.std_error.is_finite() && p.std_error >= 0.0, "{p:?}");
        }
        assert!(report.mean_price > 0.0 && report.mean_price.is_finite());
    }

    #[test]
    fn receiver_swaption_price_rises_with_the_strike() {
        let prices: Vec<f64> = [0.08, 0.10, 0.12, 0.14, 0.16]
            .iter()
            .map(|&strike| price_swaption(&with_strike(strike), 12_345, 200, || {}).0)
            .collect();
        for pair in prices.windows(2) {
            assert!(pair[1] > pair[0], "prices {prices:?}");
        }
    }

    #[test]
    fn standard_error_halves_when_the_simulations_quadruple() {
        let swaption = with_strike(0.12);
        let (_, error_small) = price_swaption(&swaption, 777, 250, || {});
        let (_, error_large) = price_swaption(&swaption, 777, 1000, || {});
        assert!(error_small > 0.0);
        let ratio = error_large / error_small;
        assert!(ratio < 0.7 && ratio > 0.35, "ratio {ratio}");
    }

    #[test]
    fn progress_is_reported_once_per_block() {
        let mut blocks = 0;
        price_swaption(&with_strike(0.1), 5, 37, || blocks += 1);
        assert_eq!(blocks, 37);
    }

    #[test]
    fn simulations_round_up_to_whole_blocks() {
        let opts = Options {
            preset: Some(Preset::Test),
            swaptions: None,
            simulations: None,
        };
        let report = run(&opts, &common(1)).expect("runs");
        assert_eq!((report.swaptions, report.simulations), (1, 16));
    }

    #[test]
    fn refuses_more_threads_than_swaptions() {
        let opts = Options {
            preset: Some(Preset::Test),
            swaptions: Some(2),
            simulations: Some(16),
        };
        assert!(matches!(run(&opts, &common(3)), Err(WorkError::BadInput(_))));
    }
}
