//! The load-balancing game of paper 000 §V, the optimal static assignment
//! (`best-static`), and the policy that applies a fixed assignment.
//!
//! ```text
//!   LoadGame { demand d_i per thread, background b_j and capacity c_j per core }
//!     load of core j under assignment β:  ℓ_j(β) = (b_j + Σ_{i: β_i = j} d_i) / c_j
//!     utility of thread i:                u_i(β) = d_i / ℓ_{β_i}(β)
//!     makespan:                           L(β)   = max over cores holding a thread of ℓ_j(β)
//!     Nash: no thread gains by moving:    ℓ_{β_i} ≤ (b_l + Σ_{k on l} d_k + d_i) / c_l  for all l
//!
//!   optimum():  all demands equal ─► greedy water-filling (exact for identical threads)
//!               else              ─► branch and bound (exact), seeded by LPT; gives up after
//!                                    NODE_LIMIT nodes and keeps the best found (exact = false)
//!   FixedPolicy: thread key ─► core place, for ever (the engine pins once)
//! ```
//!
//! With equal capacities and no background this is the game of paper 000,
//! where any pure Nash equilibrium has L ≤ 2m/(m+1) · L* (Prop. 5.2). In the
//! simulator a thread of CFS weight w_i sharing a core gets w_i / Σ weights
//! of it, so with the `cpu` metric (run share) the measured speed *is* u_i,
//! and with work proportional to w_i the core finishes at ℓ_j: the
//! makespan is the completion time.

use std::collections::HashMap;

use pinlearn_policy::{Decision, PeriodInput, Policy, ThreadKey};

/// Branch-and-bound nodes explored before settling for the best found.
const NODE_LIMIT: u64 = 5_000_000;

/// Relative tolerance when comparing loads.
const TOLERANCE: f64 = 1e-9;

/// Threads with demands, cores with background load and capacity.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadGame {
    pub demands: Vec<f64>,
    pub background: Vec<f64>,
    pub capacity: Vec<f64>,
}

/// The best static assignment found and whether it is proven optimal.
#[derive(Clone, Debug, PartialEq)]
pub struct Optimum {
    /// Core index for every thread.
    pub assignment: Vec<usize>,
    pub makespan: f64,
    /// True when the makespan is the optimum (greedy on identical threads,
    /// or a complete branch and bound).
    pub exact: bool,
}

impl LoadGame {
    /// Equal cores of capacity 1 without background.
    pub fn identical(demands: Vec<f64>, cores: usize) -> Self {
        LoadGame {
            demands,
            background: vec![0.0; cores],
            capacity: vec![1.0; cores],
        }
    }

    pub fn cores(&self) -> usize {
        self.capacity.len()
    }

    /// Σ demand + background per core (not divided by capacity).
    fn weights(&self, assignment: &[usize]) -> Vec<f64> {
        let mut weight = self.background.clone();
        for (&core, &d) in assignment.iter().zip(&self.demands) {
            weight[core] += d;
        }
        weight
    }

    /// ℓ_j for every core.
    pub fn loads(&self, assignment: &[usize]) -> Vec<f64> {
        self.weights(assignment)
            .iter()
            .zip(&self.capacity)
            .map(|(w, c)| w / c)
            .collect()
    }

    /// L(β): the largest load of a core that holds a thread (0 without threads).
    pub fn makespan(&self, assignment: &[usize]) -> f64 {
        let loads = self.loads(assignment);
        // Threads that ask for nothing finish with everyone else.
        assignment
            .iter()
            .zip(&self.demands)
            .filter(|&(_, &d)| d > 0.0)
            .map(|(&core, _)| loads[core])
            .fold(0.0, f64::max)
    }

    /// u_i(β) for every thread.
    pub fn utilities(&self, assignment: &[usize]) -> Vec<f64> {
        let loads = self.loads(assignment);
        assignment
            .iter()
            .zip(&self.demands)
            .map(|(&core, &d)| if loads[core] > 0.0 { d / loads[core] } else { 0.0 })
            .collect()
    }

    /// True when no thread can raise its utility by moving alone.
    pub fn is_nash(&self, assignment: &[usize]) -> bool {
        let weights = self.weights(assignment);
        let equal_capacity = self.capacity.windows(2).all(|pair| pair[0] == pair[1]);
        if equal_capacity && self.cores() > 1 {
            // The best other core is the lightest one other than its own:
            // O(threads + cores) with the two lightest cores.
            let mut lightest = (f64::INFINITY, usize::MAX);
            let mut second = f64::INFINITY;
            for (core, &w) in weights.iter().enumerate() {
                if w < lightest.0 {
                    second = lightest.0;
                    lightest = (w, core);
                } else if w < second {
                    second = w;
                }
            }
            return assignment.iter().zip(&self.demands).all(|(&here, &d)| {
                let other = if here == lightest.1 { second } else { lightest.0 };
                weights[here] <= (other + d) * (1.0 + TOLERANCE)
            });
        }
        assignment.iter().zip(&self.demands).all(|(&here, &d)| {
            let load_here = weights[here] / self.capacity[here];
            (0..self.cores()).all(|other| {
                other == here || load_here <= (weights[other] + d) / self.capacity[other] * (1.0 + TOLERANCE)
            })
        })
    }

    /// The bound of paper 000 Prop. 5.2 on the price of anarchy: 2m/(m+1).
    pub fn anarchy_bound(&self) -> f64 {
        let m = self.cores() as f64;
        2.0 * m / (m + 1.0)
    }

    /// The assignment minimising the makespan (see the module doc for the
    /// method).
    pub fn optimum(&self) -> Optimum {
        if self.cores() == 0 || self.demands.is_empty() {
            return Optimum {
                assignment: vec![0; self.demands.len()],
                makespan: 0.0,
                exact: true,
            };
        }
        // Threads that ask for nothing (fib's inner threads, blocked in join)
        // change no makespan: they stay on core 0, the others are solved.
        let asking: Vec<usize> = (0..self.demands.len()).filter(|&i| self.demands[i] > 0.0).collect();
        let Some(&first) = asking.first().map(|&i| &self.demands[i]) else {
            return Optimum {
                assignment: vec![0; self.demands.len()],
                makespan: 0.0,
                exact: true,
            };
        };
        if asking.len() < self.demands.len() {
            let solved = LoadGame {
                demands: asking.iter().map(|&i| self.demands[i]).collect(),
                background: self.background.clone(),
                capacity: self.capacity.clone(),
            }
            .optimum();
            let mut assignment = vec![0; self.demands.len()];
            for (&thread, &core) in asking.iter().zip(&solved.assignment) {
                assignment[thread] = core;
            }
            return Optimum {
                makespan: self.makespan(&assignment),
                assignment,
                exact: solved.exact,
            };
        }
        if self
            .demands
            .iter()
            .all(|&d| (d - first).abs() <= TOLERANCE * first.abs())
        {
            return self.water_filling();
        }
        self.branch_and_bound()
    }

    /// Every next thread to the core where it would finish first: optimal
    /// for identical threads (the makespan is the n-th smallest of the merged
    /// increasing sequences (b_j + k·d)/c_j, which greedy picks in order).
    fn water_filling(&self) -> Optimum {
        let assignment = self.greedy(&(0..self.demands.len()).collect::<Vec<_>>());
        Optimum {
            makespan: self.makespan(&assignment),
            assignment,
            exact: true,
        }
    }

    /// Greedy in the given thread order: each to the core whose load after
    /// taking it is lowest (ties: lowest index).
    fn greedy(&self, order: &[usize]) -> Vec<usize> {
        let mut weight = self.background.clone();
        let mut assignment = vec![0; self.demands.len()];
        for &thread in order {
            let d = self.demands[thread];
            let core = (0..self.cores())
                .min_by(|&a, &b| {
                    ((weight[a] + d) / self.capacity[a])
                        .total_cmp(&((weight[b] + d) / self.capacity[b]))
                        .then(a.cmp(&b))
                })
                .unwrap_or(0);
            weight[core] += d;
            assignment[thread] = core;
        }
        assignment
    }

    /// Exact search: threads in decreasing demand, cores tried in order;
    /// prunes partial assignments that cannot beat the best, tries only one
    /// of several interchangeable cores (same capacity, background and
    /// current weight), and puts identical threads on non-decreasing cores.
    fn branch_and_bound(&self) -> Optimum {
        let mut order: Vec<usize> = (0..self.demands.len()).collect();
        order.sort_by(|&a, &b| self.demands[b].total_cmp(&self.demands[a]).then(a.cmp(&b)));
        let lpt = self.greedy(&order);
        let mut search = Search {
            game: self,
            order: &order,
            weight: self.background.clone(),
            used: vec![0; self.cores()],
            current: vec![0; self.demands.len()],
            best: lpt.clone(),
            best_makespan: self.makespan(&lpt),
            nodes: 0,
            complete: true,
        };
        search.descend(0, 0.0);
        Optimum {
            makespan: search.best_makespan,
            exact: search.complete,
            assignment: search.best,
        }
    }
}

struct Search<'a> {
    game: &'a LoadGame,
    order: &'a [usize],
    /// Background + demands placed so far, per core.
    weight: Vec<f64>,
    /// Threads placed so far, per core.
    used: Vec<usize>,
    current: Vec<usize>,
    best: Vec<usize>,
    best_makespan: f64,
    nodes: u64,
    complete: bool,
}

impl Search<'_> {
    /// Places `order[depth..]`; `partial` is the makespan of what is placed.
    fn descend(&mut self, depth: usize, partial: f64) {
        if depth == self.order.len() {
            if partial < self.best_makespan * (1.0 - TOLERANCE) {
                self.best_makespan = partial;
                self.best.clone_from(&self.current);
            }
            return;
        }
        self.nodes += 1;
        if self.nodes > NODE_LIMIT {
            self.complete = false;
            return;
        }
        let game = self.game;
        let thread = self.order[depth];
        let d = game.demands[thread];
        // Identical threads go to non-decreasing cores.
        let first_core = match depth.checked_sub(1).map(|p| self.order[p]) {
            Some(previous) if (game.demands[previous] - d).abs() <= TOLERANCE * d.abs() => self.current[previous],
            _ => 0,
        };
        for core in first_core..game.cores() {
            let interchangeable_earlier = (first_core..core).any(|other| {
                game.capacity[other] == game.capacity[core]
                    && game.background[other] == game.background[core]
                    && self.used[other] == self.used[core]
                    && (self.weight[other] - self.weight[core]).abs() <= TOLERANCE
            });
            if interchangeable_earlier {
                continue;
            }
            let load = (self.weight[core] + d) / game.capacity[core];
            let next = partial.max(load);
            if next >= self.best_makespan * (1.0 - TOLERANCE) {
                continue;
            }
            self.weight[core] += d;
            self.used[core] += 1;
            self.current[thread] = core;
            self.descend(depth + 1, next);
            self.weight[core] -= d;
            self.used[core] -= 1;
            if !self.complete {
                return;
            }
        }
    }
}

/// Pins every thread to the core place it was given, for its whole life;
/// threads without an assignment get the whole place.
#[derive(Clone, Debug)]
pub struct FixedPolicy {
    name: String,
    place_of: HashMap<ThreadKey, usize>,
    otherwise: usize,
}

impl FixedPolicy {
    pub fn new(name: impl Into<String>, place_of: HashMap<ThreadKey, usize>, otherwise: usize) -> Self {
        FixedPolicy {
            name: name.into(),
            place_of,
            otherwise,
        }
    }
}

impl Policy for FixedPolicy {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn decide(&mut self, input: &PeriodInput<'_>) -> Decision {
        Decision {
            place: input
                .threads
                .iter()
                .map(|t| self.place_of.get(&t.key).copied().unwrap_or(self.otherwise))
                .collect(),
            utility: input
                .threads
                .iter()
                .map(|t| t.speed.filter(|s| s.is_finite()).unwrap_or(f64::NAN))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Every assignment, m^n of them.
    fn brute_force(game: &LoadGame) -> (f64, Vec<Vec<usize>>) {
        let n = game.demands.len();
        let m = game.cores();
        let mut all = Vec::new();
        let mut assignment = vec![0usize; n];
        loop {
            all.push(assignment.clone());
            let mut k = 0;
            while k < n {
                assignment[k] += 1;
                if assignment[k] < m {
                    break;
                }
                assignment[k] = 0;
                k += 1;
            }
            if k == n {
                break;
            }
        }
        let best = all.iter().map(|a| game.makespan(a)).fold(f64::INFINITY, f64::min);
        (best, all)
    }

    #[test]
    fn optimum_matches_brute_force_on_tiny_games() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for case in 0..300 {
            let n = rng.random_range(1..=7);
            let m = rng.random_range(1..=4);
            let pick = |rng: &mut ChaCha8Rng, values: &[f64]| values[rng.random_range(0..values.len())];
            let demands: Vec<f64> = (0..n).map(|_| pick(&mut rng, &[1.0, 1.0, 2.0, 3.0, 0.5])).collect();
            let background: Vec<f64> = (0..m).map(|_| pick(&mut rng, &[0.0, 0.0, 1.0, 2.0])).collect();
            let capacity: Vec<f64> = (0..m).map(|_| pick(&mut rng, &[1.0, 1.0, 0.5, 2.0])).collect();
            let game = LoadGame {
                demands,
                background,
                capacity,
            };
            let (best, _) = brute_force(&game);
            let optimum = game.optimum();
            assert!(optimum.exact, "case {case}: {game:?}");
            assert!(
                (optimum.makespan - best).abs() <= 1e-9 * best.max(1.0),
                "case {case}: {game:?}: found {} brute force {best}",
                optimum.makespan
            );
            assert!((game.makespan(&optimum.assignment) - optimum.makespan).abs() < 1e-12);
        }
    }

    #[test]
    fn identical_threads_use_water_filling() {
        // 5 equal threads, 3 cores, core 0 loaded with 2: best puts 2, 2, 1 on... (0+..)
        let game = LoadGame {
            demands: vec![1.0; 5],
            background: vec![2.0, 0.0, 0.0],
            capacity: vec![1.0; 3],
        };
        let optimum = game.optimum();
        assert!(optimum.exact);
        assert_eq!(optimum.makespan, 3.0);
        let (best, _) = brute_force(&game);
        assert_eq!(best, 3.0);
    }

    #[test]
    fn every_nash_equilibrium_is_within_the_price_of_anarchy_bound() {
        // Paper 000 Prop. 5.1 and 5.2 on identical cores: equilibria exist and
        // none is worse than 2m/(m+1) times the optimum.
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut equilibria_seen = 0;
        for _ in 0..120 {
            let n = rng.random_range(2..=6);
            let m = rng.random_range(2..=3);
            let demands: Vec<f64> = (0..n).map(|_| f64::from(rng.random_range(1..=4u8))).collect();
            let game = LoadGame::identical(demands, m);
            let (best, all) = brute_force(&game);
            let equilibria: Vec<&Vec<usize>> = all.iter().filter(|a| game.is_nash(a)).collect();
            assert!(!equilibria.is_empty(), "{game:?} has no pure equilibrium");
            for a in equilibria {
                equilibria_seen += 1;
                assert!(
                    game.makespan(a) <= game.anarchy_bound() * best + 1e-9,
                    "{game:?}: {a:?} makespan {} vs optimum {best}",
                    game.makespan(a)
                );
            }
        }
        assert!(equilibria_seen > 200);
    }

    #[test]
    fn the_fast_nash_check_agrees_with_the_definition() {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        for _ in 0..300 {
            let n = rng.random_range(1..=6);
            let m = rng.random_range(1..=4);
            let demands: Vec<f64> = (0..n).map(|_| f64::from(rng.random_range(1..=3u8))).collect();
            let background: Vec<f64> = (0..m).map(|_| f64::from(rng.random_range(0..=2u8))).collect();
            let game = LoadGame {
                demands,
                background,
                capacity: vec![1.0; m],
            };
            let assignment: Vec<usize> = (0..n).map(|_| rng.random_range(0..m)).collect();
            let utilities = game.utilities(&assignment);
            let definition = (0..n).all(|i| {
                (0..m).all(|other| {
                    let mut moved = assignment.clone();
                    moved[i] = other;
                    game.utilities(&moved)[i] <= utilities[i] * (1.0 + 1e-9)
                })
            });
            assert_eq!(game.is_nash(&assignment), definition, "{game:?} {assignment:?}");
        }
    }

    #[test]
    fn nash_check_finds_a_profitable_move() {
        let game = LoadGame::identical(vec![2.0, 1.0, 1.0], 2);
        assert!(!game.is_nash(&[0, 0, 0]));
        assert!(game.is_nash(&[0, 1, 1]));
        assert!(!game.is_nash(&[0, 0, 1]), "thread 1 on load 3 would have 2 on core 1");
        assert_eq!(game.utilities(&[0, 1, 1]), vec![1.0, 0.5, 0.5]);
        assert_eq!(game.anarchy_bound(), 4.0 / 3.0);
    }

    #[test]
    fn large_mixed_games_fall_back_to_the_best_found() {
        let mut demands = Vec::new();
        for k in 0..40 {
            demands.push(1.0 + f64::from(k % 7) * 0.37);
        }
        let game = LoadGame::identical(demands.clone(), 28);
        let optimum = game.optimum();
        // Whatever the search proves, the result is a valid assignment no
        // worse than LPT and no better than the trivial lower bounds.
        let lower = (demands.iter().sum::<f64>() / 28.0).max(demands.iter().copied().fold(0.0, f64::max));
        assert!(optimum.makespan >= lower - 1e-9);
        assert_eq!(optimum.assignment.len(), 40);
        assert!((game.makespan(&optimum.assignment) - optimum.makespan).abs() < 1e-12);
    }

    #[test]
    fn fixed_policy_keeps_its_assignment() {
        use pinlearn_policy::ThreadSample;
        let mut policy = FixedPolicy::new("best-static", HashMap::from([(1, 3), (2, 0)]), 9);
        let threads = [
            ThreadSample::of(1, Some(0.5)),
            ThreadSample::of(2, None),
            ThreadSample::of(7, Some(1.0)),
        ];
        let decision = policy.decide(&PeriodInput::of(0, 0.0, &threads));
        assert_eq!(decision.place, vec![3, 0, 9]);
        assert_eq!(decision.utility[0], 0.5);
        assert!(decision.utility[1].is_nan());
        assert_eq!(policy.name(), "best-static");
    }
}
