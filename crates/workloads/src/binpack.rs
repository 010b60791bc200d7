//! CSO: the evolutionary stochastic local search for bin packing of the
//! PaRLSched paper's experiments, on the Scholl, Klein & Juergens data sets.
//!
//! ```text
//!   --instance scholl:NAME ─► Instance, L2 lower bound
//!   pool of --pool candidates: first fit decreasing, then noisy variants
//!        │
//!        ▼  optimisation cycle (threads persist across cycles)
//!   thread "binpack-t": for each candidate of its contiguous share of the pool
//!        --moves bin-elimination moves (packing.rs) └► work_done(1)
//!        ▼ barrier
//!   one thread (barrier leader): the best candidate replaces the worst; keep the
//!        best packing seen; stop at L2, after --duration or --max-cycles
//!        ▼ barrier, next cycle
//!   Report { bins, lower_bound_l2, candidates_per_s, valid }
//! ```
//!
//! # What it models
//!
//! The "CSO" application of the PaRLSched paper (paper 000, §VI.A:
//! "Stochastic-Local-Search for Cutting-Stock Industrial Optimization"): a
//! pool of candidate solutions of a bin-packing problem is processed in
//! optimisation cycles; in each cycle every thread works on its portion of
//! the candidates, and the number of candidates processed in the allotted
//! time measures the processing speed. The original (FastFlow, paper 000's
//! reference \[28\]) is not public; this module is our own SLS of the kind it
//! describes (see `packing.rs`): first-fit-decreasing starts, bin-elimination
//! moves with item exchanges that favour fuller bins, best-replaces-worst
//! selection after each cycle. Each candidate carries its own random
//! generator, seeded from the common seed and its pool position, so a run
//! limited by `--max-cycles` gives the same packings whatever the thread
//! count.
//!
//! # Options
//!
//! - `--instance scholl:NAME` (default `scholl:HARD0`, whose L2 bound is
//!   below its optimum, so the search runs for the whole duration).
//! - `--duration SECONDS` (default 4): the search stops then, or earlier
//!   when a packing reaches the L2 bound.
//! - `--pool N` candidates (default 8 per thread, at least one per thread).
//! - `--moves N` moves per candidate per cycle (default 20).
//! - `--max-cycles N`: stop after N cycles (for reproducible runs).
//!
//! # Data
//!
//! Scholl, Klein & Juergens (1997) data sets 1 (720 instances), 2 (480) and
//! 3 (10, "HARD"), embedded from `data/scholl/` in a concatenated format (see
//! `binpack/instance.rs`). The data carries no optimal values, so the report
//! has none.
//!
//! # Correctness
//!
//! The report's `valid` is the check of the best packing: every item in
//! exactly one bin, no bin over capacity. The tests check it on random
//! instances (property tests), that no packing goes below L2, L2 itself on
//! hand examples and against exhaustive search, and that easy Scholl
//! instances reach L2.

mod instance;
mod packing;

use crate::common::{Common, WorkError};
use instance::Instance;
use packing::Packing;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Pool candidates per thread when `--pool` is not given.
const DEFAULT_CANDIDATES_PER_THREAD: usize = 8;

/// Options of the binpack workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Problem instance, scholl:NAME (e.g. scholl:N1C1W1_A, scholl:N1W1B1R0, scholl:HARD0)
    pub instance: String,
    /// How long to search (stops earlier when the L2 lower bound is reached)
    pub duration: Duration,
    /// Candidate solutions in the pool [default: 8 per thread]
    pub pool: Option<usize>,
    /// Local-search moves applied to each candidate per cycle
    pub moves: usize,
    /// Stop after this many optimisation cycles
    pub max_cycles: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            instance: "scholl:HARD0".into(),
            duration: Duration::from_secs(4),
            pool: None,
            moves: 20,
            max_cycles: None,
        }
    }
}

/// What a binpack run found.
#[derive(serde::Serialize, Debug)]
pub struct Report {
    /// Instance name.
    pub instance: String,
    /// Number of items.
    pub items: usize,
    /// Bin capacity.
    pub capacity: u64,
    /// Bins of the best packing found.
    pub bins: usize,
    /// Martello-Toth L2 lower bound on the number of bins.
    pub lower_bound_l2: u64,
    /// Optimisation cycles completed.
    pub cycles: u64,
    /// Candidates processed (one per candidate per cycle).
    pub candidates: u64,
    /// Candidates processed per second.
    pub candidates_per_s: f64,
    /// Whether the best packing holds every item exactly once within capacity.
    pub valid: bool,
}

/// One pool member: a packing and its own random generator.
struct Candidate {
    packing: Packing,
    rng: ChaCha8Rng,
}

/// What one thread (the barrier's leader) updates at the end of each cycle.
struct SearchState {
    cycles: u64,
    best: Packing,
}

/// Locks `mutex`; a worker that panicked holding it re-raises its panic anyway.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Contiguous share of the pool of thread `thread` out of `threads`.
fn thread_range(count: usize, threads: usize, thread: usize) -> std::ops::Range<usize> {
    let base = count / threads;
    let extra = count % threads;
    let start = thread * base + thread.min(extra);
    start..start + base + usize::from(thread < extra)
}

/// The initial pool: first fit decreasing, then noisy first fit decreasing.
fn initial_pool(inst: &Instance, size: usize, seed: u64) -> Vec<Mutex<Candidate>> {
    (0..size)
        .map(|position| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(position as u64);
            let packing = if position == 0 {
                Packing::first_fit_decreasing(inst)
            } else {
                Packing::noisy_first_fit_decreasing(inst, &mut rng)
            };
            Mutex::new(Candidate { packing, rng })
        })
        .collect()
}

/// Positions of the best and the worst candidate of the pool.
fn best_and_worst(candidates: &[MutexGuard<'_, Candidate>]) -> (usize, usize) {
    let mut best = 0;
    let mut worst = 0;
    for (i, candidate) in candidates.iter().enumerate() {
        if candidate.packing.is_better_than(&candidates[best].packing) {
            best = i;
        }
        if candidates[worst].packing.is_better_than(&candidate.packing) {
            worst = i;
        }
    }
    (best, worst)
}

/// Keeps the pool's best packing if it beats the best seen so far.
fn select_best(pool: &[Mutex<Candidate>], state: &mut SearchState) {
    let candidates: Vec<MutexGuard<'_, Candidate>> = pool.iter().map(lock).collect();
    let (best, _) = best_and_worst(&candidates);
    if candidates[best].packing.is_better_than(&state.best) {
        state.best = candidates[best].packing.clone();
    }
}

/// End of a cycle: the best packing seen is kept and the best candidate
/// replaces the worst. Called by one thread while the others wait.
fn select(pool: &[Mutex<Candidate>], state: &mut SearchState) {
    select_best(pool, state);
    let mut candidates: Vec<MutexGuard<'_, Candidate>> = pool.iter().map(lock).collect();
    let (best, worst) = best_and_worst(&candidates);
    if best != worst {
        let copy = candidates[best].packing.clone();
        candidates[worst].packing = copy;
    }
    state.cycles += 1;
}

/// Runs the optimisation cycles on `common.threads` threads until the stop
/// condition; returns the final state and the seconds spent.
fn search(
    inst: &Instance,
    lower_bound: u64,
    pool_size: usize,
    opts: &Options,
    common: &Common,
) -> Result<(SearchState, f64), WorkError> {
    let duration = opts.duration;
    let pool = initial_pool(inst, pool_size, common.seed);
    let state = Mutex::new(SearchState {
        cycles: 0,
        best: lock(&pool[0]).packing.clone(),
    });
    select_best(&pool, &mut lock(&state));
    let barrier = Barrier::new(common.threads);
    let stop = AtomicBool::new(false);

    let started = Instant::now();
    common.spawn_workers("binpack", |thread| {
        let share = &pool[thread_range(pool_size, common.threads, thread)];
        let mut panic = None;
        loop {
            // A panic must not leave the other threads waiting at the barrier forever.
            let cycle = std::panic::catch_unwind(AssertUnwindSafe(|| {
                for slot in share {
                    let mut candidate = lock(slot);
                    let Candidate { packing, rng } = &mut *candidate;
                    for _ in 0..opts.moves {
                        if packing.bin_count() as u64 <= lower_bound {
                            break;
                        }
                        packing.eliminate_bins(inst, rng);
                    }
                    drop(candidate);
                    common.work_done(1);
                }
            }));
            if let Err(payload) = cycle {
                stop.store(true, Ordering::SeqCst);
                panic = Some(payload);
            }
            if barrier.wait().is_leader() {
                let mut state = lock(&state);
                select(&pool, &mut state);
                let done = state.best.bin_count() as u64 <= lower_bound
                    || started.elapsed() >= duration
                    || opts.max_cycles.is_some_and(|max| state.cycles >= max);
                if done {
                    stop.store(true, Ordering::SeqCst);
                }
            }
            barrier.wait();
            if stop.load(Ordering::SeqCst) {
                break;
            }
        }
        if let Some(payload) = panic {
            std::panic::resume_unwind(payload);
        }
    })?;
    let elapsed = started.elapsed().as_secs_f64();
    Ok((state.into_inner().unwrap_or_else(PoisonError::into_inner), elapsed))
}

/// Runs the binpack workload.
pub fn run(opts: &Options, common: &Common) -> Result<Report, WorkError> {
    let inst = Instance::from_spec(&opts.instance)?;
    if opts.duration.is_zero() {
        return Err(WorkError::BadInput(
            "--duration must be longer than 0s: give e.g. 4s".into(),
        ));
    }
    let pool_size = opts.pool.unwrap_or(DEFAULT_CANDIDATES_PER_THREAD * common.threads);
    if pool_size < common.threads {
        return Err(WorkError::BadInput(format!(
            "--pool {pool_size} is smaller than --threads {}: every thread needs a candidate",
            common.threads
        )));
    }
    if opts.moves == 0 || opts.max_cycles == Some(0) {
        return Err(WorkError::BadInput(
            "--moves and --max-cycles must be at least 1".into(),
        ));
    }
    let lower_bound = inst.lower_bound_l2();

    common.start(&format!("binpack: improving candidate packings of {}", inst.name), 0);
    let (state, elapsed) = search(&inst, lower_bound, pool_size, opts, common)?;
    common.finish();

    let candidates = state.cycles * pool_size as u64;
    if !state.best.is_valid(&inst) {
        return Err(WorkError::WrongResult(
            "the best packing does not hold every item exactly once within capacity".into(),
        ));
    }
    if (state.best.bin_count() as u64) < lower_bound {
        return Err(WorkError::WrongResult(format!(
            "{} bins is below the L2 lower bound {lower_bound}",
            state.best.bin_count()
        )));
    }
    Ok(Report {
        instance: inst.name.clone(),
        items: inst.sizes.len(),
        capacity: inst.capacity,
        bins: state.best.bin_count(),
        lower_bound_l2: lower_bound,
        cycles: state.cycles,
        candidates,
        candidates_per_s: candidates as f64 / elapsed.max(f64::EPSILON),
        valid: state.best.is_valid(&inst),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn common(threads: usize) -> Common {
        Common::new(threads, 7, true).expect("valid settings")
    }

    fn options(instance: &str, max_cycles: Option<u64>) -> Options {
        Options {
            instance: instance.into(),
            duration: Duration::from_secs(60),
            pool: Some(6),
            moves: 10,
            max_cycles,
        }
    }

    #[test]
    fn easy_scholl_instances_reach_the_lower_bound() {
        for name in ["N1C1W1_A", "N1C1W1_B", "N1C1W1_C", "N1C1W1_D", "N1C1W1_E"] {
            let report = run(&options(&format!("scholl:{name}"), Some(500)), &common(2)).expect("runs");
            assert!(report.valid, "{name}");
            assert_eq!(report.bins as u64, report.lower_bound_l2, "{name}: {report:?}");
        }
    }

    #[test]
    fn hard_instance_stays_valid_and_above_the_bound() {
        let report = run(&options("scholl:HARD0", Some(5)), &common(2)).expect("runs");
        assert!(report.valid);
        assert!(report.bins as u64 >= report.lower_bound_l2);
        assert_eq!(report.cycles, 5);
        assert_eq!(report.candidates, 30);
    }

    #[test]
    fn same_seed_gives_the_same_search_whatever_the_thread_count() {
        let opts = options("scholl:N2C2W2_B", Some(4));
        let inst = Instance::from_spec(&opts.instance).expect("exists");
        let lower_bound = inst.lower_bound_l2();
        let best_with = |threads| {
            let (state, _) = search(&inst, lower_bound, 6, &opts, &common(threads)).expect("runs");
            assert_eq!(state.cycles, 4);
            state.best
        };
        let one = best_with(1);
        assert!(one.is_valid(&inst));
        assert_eq!(one, best_with(2));
        assert_eq!(one, best_with(3));
    }

    #[test]
    fn selection_copies_the_best_over_the_worst() {
        let inst = Instance::new("t".into(), 10, vec![6, 6, 4, 4]).expect("valid");
        let good = Packing::first_fit(&inst, &[0, 2, 1, 3]); // 6+4, 6+4
        let bad = Packing::first_fit(&inst, &[2, 3, 0, 1]); // 4+4, 6, 6
        assert_eq!((good.bin_count(), bad.bin_count()), (2, 3));
        let pool: Vec<Mutex<Candidate>> = [bad.clone(), good.clone(), bad.clone()]
            .into_iter()
            .map(|packing| {
                Mutex::new(Candidate {
                    packing,
                    rng: ChaCha8Rng::seed_from_u64(0),
                })
            })
            .collect();
        let mut state = SearchState { cycles: 0, best: bad };
        select(&pool, &mut state);
        assert_eq!(state.best, good);
        assert_eq!(state.cycles, 1);
        let copies = pool.iter().filter(|c| lock(c).packing == good).count();
        assert_eq!(copies, 2);
    }

    #[test]
    fn rejects_bad_options() {
        let mut opts = options("scholl:N1C1W1_A", Some(1));
        opts.pool = Some(1);
        assert!(matches!(run(&opts, &common(2)), Err(WorkError::BadInput(_))));
        let mut opts = options("scholl:N1C1W1_A", Some(1));
        opts.duration = Duration::ZERO;
        assert!(matches!(run(&opts, &common(1)), Err(WorkError::BadInput(_))));
        assert!(matches!(
            run(&options("nowhere:X", Some(1)), &common(1)),
            Err(WorkError::BadInput(_))
        ));
    }
}
