//! Aspiration learning for NUMA-node switching (paper 000 Table I, paper 002
//! §4): the slow level that moves at most one thread per NUMA period to
//! another node.
//!
//! ```text
//!   every T_NUMA, for each thread i with a mean own speed s_i this period:
//!
//!   (0) where memory follows (the kernel's NUMA balancing, after F seconds:
//!       `with_memory_follows`): a thread that has worked F seconds more on
//!       another node than anywhere else has its home (its memory) there now
//!   (1) rho_i ← rho_i + ν (s_i − rho_i)      first time: rho = s, bU = rho, bL = rho/η
//!   (2) BR_i = { n ≠ node_i : rho_i < γ · mean rho_j over threads j on n }
//!              (a node with no measured thread counts: unused capacity)
//!       with `mind_memory` (pinlearn's default, not the papers'): a node
//!       other than the thread's home (where it first ran: its memory) counts
//!       remote_cost times slower, both sides of the comparison
//!         rho_i · kept(node_i) < γ · mean rho_j · kept(n)
//!         kept(n) = 1 at home (or where remote memory costs nothing), else 1 / remote_cost
//!       and an empty node is a better reply only if kept(n) ≥ kept(node_i)
//!   (3) with the benchmarks from before (4):
//!         rho_i < bL_i  → wants a node drawn uniformly from BR_i   (BelowLower)
//!         otherwise     → w.p. ζ wants a node drawn from BR_i      (Experiment)
//!         BR_i empty    → stays
//!   (4) rho ≥ bU → bU = rho, bL = rho/η      (raised)
//!       rho < bL → bL = rho, bU = η·rho      (lowered)
//!       otherwise unchanged                  (kept)
//!   (5) of the threads that want to move, ONE drawn uniformly migrates
//! ```
//!
//! Threads are visited in index order (the caller keeps them in key order)
//! and the RNG is used in that order only, so a step is reproducible.
//! Each stage is a separate function with explicit inputs so it can be
//! tested on its own; [`Aspiration::step`] chains them.

use rand::Rng;
use serde::{Deserialize, Serialize};

/// Parameters of the NUMA level (`[numa]` in the configuration).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AspirationConfig {
    /// Rate ν of the discounted running average rho, in (0, 1].
    pub nu: f64,
    /// Ratio η between the upper and the lower benchmark, > 1.
    pub eta: f64,
    /// Better-reply margin γ in (0, 1): a node is better when its threads
    /// average more than rho_i / γ.
    pub gamma: f64,
    /// Experimentation probability ζ in [0, 1] while performance is
    /// satisfactory. pinlearn's default is 0 (the papers' 0.02 is in
    /// `configs/papers-learner.toml`): with tens or hundreds of threads,
    /// each tick some satisfied thread experiments, and with barriers the
    /// one that moved to a fuller node sets everybody's pace
    /// (docs/configuration.md). A thread that falls below its lower
    /// benchmark still moves.
    pub zeta: f64,
    /// NUMA period T_NUMA in seconds (> 0); the engine turns it into ticks.
    pub period_s: f64,
    /// A node other than the one a thread first ran on (where its memory
    /// is) counts `remote_cost` times slower in its better replies (pinlearn's
    /// rule; the papers' learner has none).
    pub mind_memory: bool,
}

impl Default for AspirationConfig {
    fn default() -> Self {
        AspirationConfig {
            nu: 0.1,
            eta: 1.25,
            gamma: 0.9,
            zeta: 0.0,
            period_s: 2.0,
            mind_memory: true,
        }
    }
}

/// The aspiration level and benchmarks of one thread, once it has been
/// measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AspirationLevels {
    /// Discounted running average of the thread's speed.
    pub rho: f64,
    /// Upper benchmark bU: at or above it performance is satisfactory.
    pub upper: f64,
    /// Lower benchmark bL: below it performance is unsatisfactory.
    pub lower: f64,
}

/// The NUMA-level state of one thread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NumaState {
    /// The node the thread runs on.
    pub node: usize,
    /// The node its memory is on: where it first ran (a migration leaves
    /// it there, until the kernel's NUMA balancing is taken to have brought
    /// it: [`Aspiration::with_memory_follows`]).
    pub home: usize,
    /// `None` until the thread's first measured NUMA period.
    pub levels: Option<AspirationLevels>,
    /// The node away from `home` the thread has worked on, and for how long
    /// more than anywhere else (seconds; only with memory that follows).
    pub away: Option<(usize, f64)>,
}

impl NumaState {
    /// A thread on `node`, its home, that has not been measured yet.
    pub fn new(node: usize) -> Self {
        NumaState {
            node,
            home: node,
            levels: None,
            away: None,
        }
    }

    /// One NUMA period of `period_s` seconds on `self.node`, where the
    /// kernel brings a thread's memory to a node once it has worked there
    /// `follows_s` seconds more than anywhere else: time at home or on a
    /// third node counts against the node it was heading for.
    fn worked(&mut self, period_s: f64, follows_s: f64) {
        self.away = match self.away {
            _ if self.node == self.home => self
                .away
                .map(|(node, s)| (node, s - period_s))
                .filter(|&(_, s)| s > 0.0),
            Some((node, s)) if node == self.node => Some((node, s + period_s)),
            Some((node, s)) if s > period_s => Some((node, s - period_s)),
            _ => Some((self.node, period_s)),
        };
        if let Some((node, s)) = self.away
            && s >= follows_s
        {
            self.home = node;
            self.away = None;
        }
    }
}

/// How step (4) changed the benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchmarkUpdate {
    /// rho ≥ bU: both benchmarks follow rho up.
    Raised,
    /// rho < bL: both benchmarks follow rho down.
    Lowered,
    /// bL ≤ rho < bU: unchanged.
    Kept,
}

/// Why a thread wants to change node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoveReason {
    /// rho fell below the lower benchmark.
    BelowLower,
    /// Performance is satisfactory; the ζ coin said to try another node.
    Experiment,
}

/// The single migration of a NUMA period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migration {
    /// Index of the thread in the slice given to [`Aspiration::step`].
    pub thread: usize,
    pub from: usize,
    pub to: usize,
    pub reason: MoveReason,
}

impl AspirationLevels {
    /// Step (1) for a thread's first measurement: rho = s, bU = rho,
    /// bL = rho / η.
    pub fn first(speed: f64, eta: f64) -> Self {
        AspirationLevels {
            rho: speed,
            upper: speed,
            lower: speed / eta,
        }
    }

    /// Step (1): rho ← rho + ν (s − rho).
    pub fn track(&mut self, speed: f64, nu: f64) {
        self.rho += nu * (speed - self.rho);
    }

    /// Step (4): moves the benchmarks with rho.
    pub fn update_benchmarks(&mut self, eta: f64) -> BenchmarkUpdate {
        if self.rho >= self.upper {
            self.upper = self.rho;
            self.lower = self.rho / eta;
            BenchmarkUpdate::Raised
        } else if self.rho < self.lower {
            self.lower = self.rho;
            self.upper = eta * self.rho;
            BenchmarkUpdate::Lowered
        } else {
            BenchmarkUpdate::Kept
        }
    }
}

/// Step (2): the nodes other than `own_node` where the threads do clearly
/// better than `rho`. `node_mean_rho[n]` is the mean rho of the measured
/// threads on node `n` (`None` when it has none: a better reply, since its
/// capacity is unused). The thread itself is on `own_node`, so the means of
/// the other nodes never include it.
pub fn better_replies(rho: f64, own_node: usize, node_mean_rho: &[Option<f64>], gamma: f64) -> Vec<usize> {
    better_replies_near(rho, own_node, node_mean_rho, gamma, own_node, 1.0)
}

/// The share of its speed a thread whose memory is on `home` keeps on
/// `node`: all of it at home (or where remote memory costs nothing, 1 or
/// less), else `1 / remote_cost`. The NUMA levels of the learner and of
/// `bubbles+learn` weigh nodes by it.
pub(crate) fn kept_on(node: usize, home: usize, remote_cost: f64) -> f64 {
    if node == home || remote_cost <= 1.0 {
        1.0
    } else {
        1.0 / remote_cost
    }
}

/// How many times slower a thread whose memory is on `home` runs on node
/// `to` than on node `from` (at least 1: going home is no gain, its memory
/// may no longer all be there), by [`kept_on`].
pub(crate) fn slower_on(from: usize, to: usize, home: usize, remote_cost: f64) -> f64 {
    (kept_on(from, home, remote_cost) / kept_on(to, home, remote_cost)).max(1.0)
}

/// Step (2) with memory in mind: as [`better_replies`], each node's speed
/// counted `remote_cost` times slower unless it is `home` (where the
/// thread's memory is), and an empty node a better reply only if it is no
/// farther from the memory than `own_node`. `remote_cost` 1: the papers'
/// rule.
pub fn better_replies_near(
    rho: f64,
    own_node: usize,
    node_mean_rho: &[Option<f64>],
    gamma: f64,
    home: usize,
    remote_cost: f64,
) -> Vec<usize> {
    let kept = |node: usize| kept_on(node, home, remote_cost);
    let own = rho * kept(own_node);
    node_mean_rho
        .iter()
        .enumerate()
        .filter(|&(node, mean)| {
            node != own_node
                && match mean {
                    None => kept(node) >= kept(own_node),
                    Some(mean) => own < gamma * mean * kept(node),
                }
        })
        .map(|(node, _)| node)
        .collect()
}

/// Step (3): whether a thread wants to move, and where. `levels` holds the
/// updated rho with the benchmarks from before this period's update. RNG
/// draws, in order: the ζ coin (only when rho ≥ bL), then the destination
/// (only when a move is wanted and `better` is not empty).
pub fn move_intent<R: Rng + ?Sized>(
    levels: &AspirationLevels,
    better: &[usize],
    zeta: f64,
    rng: &mut R,
) -> Option<(usize, MoveReason)> {
    let reason = if levels.rho < levels.lower {
        MoveReason::BelowLower
    } else if rng.random::<f64>() < zeta {
        MoveReason::Experiment
    } else {
        return None;
    };
    if better.is_empty() {
        return None;
    }
    Some((better[rng.random_range(0..better.len())], reason))
}

/// The NUMA-level learner: configuration and node count. The per-thread
/// state ([`NumaState`]) lives with the caller's threads.
#[derive(Clone, Debug, PartialEq)]
pub struct Aspiration {
    cfg: AspirationConfig,
    nodes: usize,
    /// How many times slower a thread runs away from its memory (1 until
    /// [`Aspiration::with_remote_cost`]).
    remote_cost: f64,
    /// Seconds of work on another node after which a thread's memory is
    /// there too (the kernel's NUMA balancing); `None`: it stays.
    memory_follows_s: Option<f64>,
}

impl Aspiration {
    pub fn new(cfg: AspirationConfig, nodes: usize) -> Self {
        Aspiration {
            cfg,
            nodes,
            remote_cost: 1.0,
            memory_follows_s: None,
        }
    }

    /// The same learner assuming the kernel moves a thread's memory to a
    /// node once the thread has worked there `seconds` more than anywhere
    /// else (automatic NUMA balancing): its home follows it then, and the
    /// better replies stop pulling it back to where its memory was.
    /// `None` (or not positive and finite): memory stays where it was
    /// first touched.
    pub fn with_memory_follows(mut self, seconds: Option<f64>) -> Self {
        self.memory_follows_s = seconds.filter(|s| s.is_finite() && *s > 0.0);
        self
    }

    /// The same learner assuming a thread runs `cost` times slower away
    /// from its home node (used with `mind_memory`; at least 1).
    pub fn with_remote_cost(mut self, cost: f64) -> Self {
        self.remote_cost = if cost.is_finite() { cost.max(1.0) } else { 1.0 };
        self
    }

    /// Seconds of work on another node after which a thread's memory is
    /// taken to be there too; `None`: memory stays.
    pub fn memory_follows_s(&self) -> Option<f64> {
        self.memory_follows_s
    }

    pub fn config(&self) -> &AspirationConfig {
        &self.cfg
    }

    /// How many times slower a thread is taken to run away from its home
    /// node: the assumed remote cost with `mind_memory`, else 1.
    pub fn remote_cost(&self) -> f64 {
        if self.cfg.mind_memory { self.remote_cost } else { 1.0 }
    }

    /// One NUMA period: `speeds[i]` is thread i's mean own speed over the
    /// period (`None`: no data, the thread sits this period out). Updates
    /// every measured thread's levels, and moves at most one thread by
    /// setting its `node`; returns that migration.
    ///
    /// # Panics
    /// If `states` and `speeds` differ in length, or a state's node is not
    /// below the node count (caller bugs).
    pub fn step<R: Rng + ?Sized>(
        &self,
        states: &mut [NumaState],
        speeds: &[Option<f64>],
        rng: &mut R,
    ) -> Option<Migration> {
        assert_eq!(states.len(), speeds.len(), "one speed per thread");
        let speeds: Vec<Option<f64>> = speeds.iter().map(|&s| crate::objective::sanitise_speed(s)).collect();

        // (1) aspiration levels; remember which threads take part. Where
        // memory follows, a thread measured away from its home has worked
        // there this period.
        for (state, speed) in states.iter_mut().zip(&speeds) {
            if let (Some(follows_s), Some(_)) = (self.memory_follows_s, speed) {
                state.worked(self.cfg.period_s, follows_s);
            }
            if let Some(speed) = *speed {
                match &mut state.levels {
                    Some(levels) => levels.track(speed, self.cfg.nu),
                    None => state.levels = Some(AspirationLevels::first(speed, self.cfg.eta)),
                }
            }
        }

        // Mean rho per node over every measured thread, for (2).
        let mut sums = vec![(0.0, 0usize); self.nodes];
        for state in states.iter() {
            if let Some(levels) = state.levels {
                let (sum, count) = &mut sums[state.node];
                *sum += levels.rho;
                *count += 1;
            }
        }
        let node_mean_rho: Vec<Option<f64>> = sums
            .iter()
            .map(|&(sum, count)| (count > 0).then(|| sum / count as f64))
            .collect();

        // (2)-(4) per thread, in order.
        let mut movers = Vec::new();
        for (index, (state, speed)) in states.iter_mut().zip(&speeds).enumerate() {
            let (Some(levels), Some(_)) = (&mut state.levels, speed) else {
                continue;
            };
            let better = better_replies_near(
                levels.rho,
                state.node,
                &node_mean_rho,
                self.cfg.gamma,
                state.home,
                self.remote_cost(),
            );
            if let Some((to, reason)) = move_intent(levels, &better, self.cfg.zeta, rng) {
                movers.push(Migration {
                    thread: index,
                    from: state.node,
                    to,
                    reason,
                });
            }
            levels.update_benchmarks(self.cfg.eta);
        }

        // (5) one of them migrates.
        if movers.is_empty() {
            return None;
        }
        let migration = movers[rng.random_range(0..movers.len())];
        states[migration.thread].node = migration.to;
        Some(migration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn levels(rho: f64, upper: f64, lower: f64) -> AspirationLevels {
        AspirationLevels { rho, upper, lower }
    }

    #[test]
    fn first_measurement_sets_both_benchmarks() {
        assert_eq!(AspirationLevels::first(1.0, 1.25), levels(1.0, 1.0, 0.8));
    }

    #[test]
    fn rho_is_a_discounted_average() {
        let mut l = levels(1.0, 1.0, 0.8);
        l.track(0.0, 0.1);
        assert!((l.rho - 0.9).abs() < 1e-12);
    }

    #[test]
    fn benchmarks_rise_with_rho() {
        let mut l = levels(1.5, 1.0, 0.8);
        assert_eq!(l.update_benchmarks(1.25), BenchmarkUpdate::Raised);
        assert_eq!(l, levels(1.5, 1.5, 1.2));
        let mut equal = levels(1.0, 1.0, 0.5);
        assert_eq!(equal.update_benchmarks(2.0), BenchmarkUpdate::Raised, "rho = bU raises");
        assert_eq!(equal, levels(1.0, 1.0, 0.5));
    }

    #[test]
    fn benchmarks_fall_below_the_lower_one() {
        let mut l = levels(0.5, 1.0, 0.8);
        assert_eq!(l.update_benchmarks(1.25), BenchmarkUpdate::Lowered);
        assert_eq!(l, levels(0.5, 0.625, 0.5));
    }

    #[test]
    fn benchmarks_stay_in_between() {
        for rho in [0.8, 0.9, 0.999] {
            let mut l = levels(rho, 1.0, 0.8);
            assert_eq!(l.update_benchmarks(1.25), BenchmarkUpdate::Kept, "{rho}");
            assert_eq!(l, levels(rho, 1.0, 0.8));
        }
    }

    #[test]
    fn better_replies_are_nodes_doing_clearly_better() {
        let means = [Some(0.5), Some(1.0), Some(0.55), None];
        // 0.5 < 0.9 * 1.0; 0.5 < 0.9 * 0.55 = 0.495 is false; node 3 is empty.
        assert_eq!(better_replies(0.5, 0, &means, 0.9), vec![1, 3]);
        // never the own node, even when empty or better
        assert_eq!(better_replies(0.1, 3, &[None, None, None, None], 0.9), vec![0, 1, 2]);
        assert_eq!(
            better_replies(2.0, 0, &[Some(2.0), Some(1.0)], 0.9),
            Vec::<usize>::new()
        );
    }

    #[test]
    fn with_memory_in_mind_a_node_away_from_home_counts_remote_cost_times_slower() {
        // At home on node 0 at 0.5; node 1's threads run at 1.0, node 2 is empty.
        let means = [Some(0.5), Some(1.0), None];
        assert_eq!(
            better_replies_near(0.5, 0, &means, 0.9, 0, 1.0),
            vec![1, 2],
            "the papers' rule"
        );
        assert_eq!(better_replies(0.5, 0, &means, 0.9), vec![1, 2]);
        // 3x slower away from its memory: 1.0 / 3 is no better than 0.5, and
        // an empty node is farther from the memory than home.
        assert!(better_replies_near(0.5, 0, &means, 0.9, 0, 3.0).is_empty());
        // Twice as fast there still pays at a remote cost of 1.5.
        assert_eq!(better_replies_near(0.5, 0, &means, 0.9, 0, 1.5), vec![1]);
        // Away from home (on node 1, memory on node 0) at 0.5: home, where
        // threads run at 0.4, is better (0.5 / 3 < 0.9 x 0.4); the empty
        // node 2 is as far from the memory as node 1, so it counts too.
        let means = [Some(0.4), Some(0.5), None];
        assert_eq!(better_replies_near(0.5, 1, &means, 0.9, 0, 3.0), vec![0, 2]);
    }

    #[test]
    fn where_memory_follows_a_thread_s_home_moves_once_it_worked_long_enough_elsewhere() {
        // NUMA periods of 2 s, memory following after 5 s of work.
        let mut away = NumaState {
            node: 1,
            ..NumaState::new(0)
        };
        away.worked(2.0, 5.0);
        away.worked(2.0, 5.0);
        assert_eq!((away.home, away.away), (0, Some((1, 4.0))), "4 s of 5");
        // A period back home counts against the node it was heading for.
        away.node = 0;
        away.worked(2.0, 5.0);
        assert_eq!((away.home, away.away), (0, Some((1, 2.0))));
        // A third node starts over only once the lead is spent.
        away.node = 2;
        away.worked(2.0, 5.0);
        assert_eq!((away.home, away.away), (0, Some((2, 2.0))));
        away.worked(2.0, 5.0);
        away.worked(2.0, 5.0);
        assert_eq!((away.home, away.away), (2, None), "6 s on node 2: its memory is there");

        // In a step: a thread away from home is pulled back while its
        // memory stays (home's threads run at 0.8, it runs at 1.0 three
        // times slower than it would at home), and left where it is once
        // its memory has come.
        let cfg = AspirationConfig {
            zeta: 1.0,
            ..AspirationConfig::default()
        };
        let speeds = [Some(0.8), Some(1.0)];
        let stays = Aspiration::new(cfg, 2).with_remote_cost(3.0);
        let mut states = vec![
            NumaState::new(0),
            NumaState {
                node: 1,
                ..NumaState::new(0)
            },
        ];
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let moved = stays.step(&mut states, &speeds, &mut rng).expect("pulled home");
        assert_eq!((moved.thread, moved.to), (1, 0));
        let follows = stays.clone().with_memory_follows(Some(3.0));
        let mut states = vec![
            NumaState::new(0),
            NumaState {
                node: 1,
                ..NumaState::new(0)
            },
        ];
        let first = follows.step(&mut states, &speeds, &mut rng);
        assert_eq!(first.map(|m| m.thread), Some(1), "2 s of 3: still pulled home");
        let mut states = vec![
            NumaState::new(0),
            NumaState {
                node: 1,
                ..NumaState::new(0)
            },
        ];
        states[1].away = Some((1, 2.0));
        for _ in 0..10 {
            assert_eq!(follows.step(&mut states, &speeds, &mut rng), None, "{states:?}");
        }
        assert_eq!(states[1].home, 1);
        // Not positive or not finite: memory stays.
        for bad in [Some(0.0), Some(-1.0), Some(f64::NAN), Some(f64::INFINITY), None] {
            assert_eq!(stays.clone().with_memory_follows(bad), stays, "{bad:?}");
        }
    }

    #[test]
    fn with_memory_in_mind_experiments_stay_home_where_other_nodes_are_not_remote_cost_faster() {
        // Two threads at home on node 0 and one on node 1, all at the same
        // speed, node 2 empty; zeta 1: everyone experiments every period.
        let cfg = AspirationConfig {
            zeta: 1.0,
            ..AspirationConfig::default()
        };
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let speeds = [Some(1.0), Some(1.0), Some(1.0)];
        let papers = Aspiration::new(
            AspirationConfig {
                mind_memory: false,
                ..cfg
            },
            3,
        )
        .with_remote_cost(3.0);
        let mut states = vec![NumaState::new(0), NumaState::new(0), NumaState::new(1)];
        assert!(
            (0..20).any(|_| papers.step(&mut states, &speeds, &mut rng).is_some()),
            "the papers' rule drifts to the empty node"
        );
        let minding = Aspiration::new(cfg, 3).with_remote_cost(3.0);
        let mut states = vec![NumaState::new(0), NumaState::new(0), NumaState::new(1)];
        assert!((0..20).all(|_| minding.step(&mut states, &speeds, &mut rng).is_none()));
        assert_eq!(states.iter().map(|s| s.node).collect::<Vec<_>>(), vec![0, 0, 1]);
    }

    #[test]
    fn below_the_lower_benchmark_always_wants_a_better_reply() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let unhappy = levels(0.5, 1.0, 0.8);
        for _ in 0..50 {
            let (to, reason) = move_intent(&unhappy, &[2, 5], 0.0, &mut rng).unwrap();
            assert!(to == 2 || to == 5);
            assert_eq!(reason, MoveReason::BelowLower);
        }
        assert_eq!(move_intent(&unhappy, &[], 1.0, &mut rng), None, "no better reply: stay");
    }

    #[test]
    fn satisfied_threads_experiment_with_probability_zeta() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let happy = levels(1.0, 1.0, 0.8);
        assert!((0..200).all(|_| move_intent(&happy, &[1], 0.0, &mut rng).is_none()));
        assert!((0..200).all(|_| move_intent(&happy, &[1], 1.0, &mut rng) == Some((1, MoveReason::Experiment))));
        assert!((0..200).all(|_| move_intent(&happy, &[], 1.0, &mut rng).is_none()));
        let tries = (0..4000)
            .filter(|_| move_intent(&happy, &[1], 0.25, &mut rng).is_some())
            .count();
        assert!((850..1150).contains(&tries), "{tries} of 4000 at zeta 0.25");
    }

    #[test]
    fn destinations_are_uniform_over_better_replies() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let unhappy = levels(0.1, 1.0, 0.8);
        let mut counts = [0usize; 3];
        for _ in 0..3000 {
            let (to, _) = move_intent(&unhappy, &[0, 1, 2], 0.0, &mut rng).unwrap();
            counts[to] += 1;
        }
        assert!(counts.iter().all(|&c| (850..1150).contains(&c)), "{counts:?}");
    }

    fn config(zeta: f64) -> AspirationConfig {
        AspirationConfig {
            zeta,
            ..AspirationConfig::default()
        }
    }

    #[test]
    fn first_step_initialises_and_skips_unmeasured_threads() {
        let aspiration = Aspiration::new(config(0.0), 2);
        let mut states = vec![NumaState::new(0), NumaState::new(1)];
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        assert_eq!(aspiration.step(&mut states, &[Some(1.0), None], &mut rng), None);
        assert_eq!(states[0].levels, Some(levels(1.0, 1.0, 0.8)));
        assert_eq!(states[1].levels, None);
        // non-finite speeds are no data; negative ones count as 0
        aspiration.step(&mut states, &[Some(f64::NAN), Some(-2.0)], &mut rng);
        assert_eq!(states[0].levels, Some(levels(1.0, 1.0, 0.8)));
        assert_eq!(states[1].levels, Some(levels(0.0, 0.0, 0.0)));
    }

    #[test]
    fn a_thread_whose_speed_collapses_moves_to_the_better_node() {
        let aspiration = Aspiration::new(config(0.0), 2);
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut states = vec![NumaState::new(0), NumaState::new(0), NumaState::new(1)];
        aspiration.step(&mut states, &[Some(1.0), Some(1.0), Some(1.0)], &mut rng);
        // Thread 1 now runs at 0.1: rho = 1 + 0.1 (0.1 - 1) = 0.91 ≥ bL = 0.8.
        assert_eq!(
            aspiration.step(&mut states, &[Some(1.0), Some(0.1), Some(1.0)], &mut rng),
            None
        );
        let kept = states[1].levels.unwrap();
        assert!(
            (kept.rho - 0.91).abs() < 1e-12 && kept.upper == 1.0 && kept.lower == 0.8,
            "{kept:?}"
        );
        // rho = 0.829, still ≥ 0.8; then 0.756 < 0.8 → switch to node 1
        // (0.756 < 0.9 × 1.0).
        assert_eq!(
            aspiration.step(&mut states, &[Some(1.0), Some(0.1), Some(1.0)], &mut rng),
            None
        );
        let migration = aspiration.step(&mut states, &[Some(1.0), Some(0.1), Some(1.0)], &mut rng);
        assert_eq!(
            migration,
            Some(Migration {
                thread: 1,
                from: 0,
                to: 1,
                reason: MoveReason::BelowLower
            })
        );
        assert_eq!(states[1].node, 1);
        // the benchmarks followed rho down after the decision
        let l = states[1].levels.unwrap();
        assert_eq!(l.lower, l.rho);
    }

    #[test]
    fn at_most_one_thread_migrates_per_period() {
        let aspiration = Aspiration::new(config(1.0), 4);
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let speeds = vec![Some(1.0); 20];
        let mut movers_seen = std::collections::BTreeSet::new();
        for _ in 0..10 {
            // Everyone on node 0; nodes 1-3 are empty, so all 20 want to try.
            let mut states = vec![NumaState::new(0); 20];
            let migration = aspiration
                .step(&mut states, &speeds, &mut rng)
                .expect("someone wants to move");
            let changed: Vec<usize> = (0..20).filter(|&i| states[i].node != 0).collect();
            assert_eq!(changed, vec![migration.thread]);
            assert_eq!(migration.reason, MoveReason::Experiment);
            assert_eq!(migration.from, 0);
            assert_eq!(states[migration.thread].node, migration.to);
            movers_seen.insert(migration.thread);
        }
        assert!(movers_seen.len() > 3, "the mover is drawn at random: {movers_seen:?}");
    }

    #[test]
    fn nobody_moves_once_no_node_is_clearly_better() {
        let aspiration = Aspiration::new(config(1.0), 2);
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut states = vec![
            NumaState::new(0),
            NumaState::new(0),
            NumaState::new(1),
            NumaState::new(1),
        ];
        for _ in 0..50 {
            assert_eq!(aspiration.step(&mut states, &[Some(1.0); 4], &mut rng), None);
        }
    }

    #[test]
    fn satisfied_threads_never_move_with_zeta_zero() {
        let aspiration = Aspiration::new(config(0.0), 2);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut states = vec![NumaState::new(0), NumaState::new(0)];
        for _ in 0..100 {
            assert_eq!(aspiration.step(&mut states, &[Some(1.0), Some(1.0)], &mut rng), None);
        }
    }

    #[test]
    fn same_seed_same_migrations() {
        let run = |seed| {
            let aspiration = Aspiration::new(config(0.5), 3);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut states: Vec<NumaState> = (0..12).map(|i| NumaState::new(i % 3)).collect();
            (0..50)
                .map(|k| {
                    let speeds: Vec<Option<f64>> = states
                        .iter()
                        .map(|s| Some(0.2 + 0.3 * s.node as f64 + 0.01 * (k % 7) as f64))
                        .collect();
                    aspiration.step(&mut states, &speeds, &mut rng)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(11), run(11));
        assert_ne!(run(11), run(12));
    }
}
