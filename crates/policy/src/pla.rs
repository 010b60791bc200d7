//! The perturbed learning automaton of one thread (core level; paper 003
//! eq. 3–4, paper 000 Table II, with the papers' sign typo corrected).
//!
//! ```text
//!   period k:  choose(rng) ── draws action a from σ = (1−λ)·x + λ/|A| ──► place
//!                  ... the thread runs there for one period ...
//!   period k+1: learn(u)  ── u = utility of what happened on a
//!                  ubar unset     → ubar = u                      (no reinforcement)
//!                  u ≥ θ·ubar, u>0 → x ← x + s·(e_a − x),  s = min(1, ε·u/ubar)
//!                  then            ubar ← ubar + ν·(u − ubar)
//! ```
//!
//! `x` is the nominal strategy (a probability vector over the thread's
//! actions), `σ` the perturbed one actually sampled: the `λ/|A|` floor keeps
//! every action explored so the automaton can leave a place that went bad.
//! The step is normalised by the running average `ubar`, which makes it free
//! of the metric's unit (the papers' ε·u only works at their 1e8
//! instructions/s scale) and keeps `x` in the simplex because the step never
//! exceeds 1. Reinforcing only when `u ≥ θ·ubar` (θ = 0.98 in the original
//! code) is the papers' "only above the running average" rule with a little
//! slack for measurement noise.

use rand::Rng;
use serde::{Deserialize, Serialize};

/// How far rounding may move the sum of a nominal strategy from 1 before it
/// is renormalised: twenty million times below the perturbation floor of the
/// default λ over a thousand actions (0.02/1024, about 2e-5).
const SUM_DRIFT: f64 = 1e-12;

/// Parameters of the core-level automaton (`[pla]` in the configuration).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlaConfig {
    /// Reinforcement step ε, relative to the running average, in (0, 1].
    pub step: f64,
    /// Perturbation λ: the share of probability spread evenly over all
    /// actions, in [0, 1).
    pub lambda: f64,
    /// Rate ν of the running average of the utility, in (0, 1].
    pub nu: f64,
    /// Reinforce the last action when u ≥ threshold · running average,
    /// in (0, 1.5].
    pub threshold: f64,
    /// Probability mass a fresh automaton puts on its first action on top of
    /// the uniform share, in [0, 1].
    pub init_focus: f64,
}

impl Default for PlaConfig {
    fn default() -> Self {
        PlaConfig {
            step: 0.1,
            lambda: 0.02,
            nu: 0.05,
            threshold: 0.98,
            init_focus: 0.9,
        }
    }
}

/// The learning automaton of one thread over its places.
#[derive(Clone, Debug, PartialEq)]
pub struct Pla {
    /// Place indices (into `Layout::places`) the thread may run on.
    actions: Vec<usize>,
    /// Nominal strategy, aligned with `actions`.
    x: Vec<f64>,
    /// Running average of the utility, `None` before the first one.
    ubar: Option<f64>,
    /// Index into `actions` of the action taken last (the one `learn`
    /// reinforces).
    last: usize,
    /// Index into `actions` of the action it started on.
    first: usize,
    cfg: PlaConfig,
}

impl Pla {
    /// A fresh automaton whose current action is `actions[first]`; its
    /// nominal strategy puts `init_focus` on `first` and spreads the rest
    /// evenly over all actions.
    ///
    /// # Panics
    /// If `actions` is empty or `first` is out of range (a caller bug: every
    /// thread has at least one place).
    pub fn new(actions: Vec<usize>, first: usize, cfg: PlaConfig) -> Self {
        assert!(
            first < actions.len(),
            "first action {first} of {} actions",
            actions.len()
        );
        let focus = if (0.0..=1.0).contains(&cfg.init_focus) {
            cfg.init_focus
        } else {
            0.0
        };
        let spread = (1.0 - focus) / actions.len() as f64;
        let mut x = vec![spread; actions.len()];
        x[first] += focus;
        Pla {
            actions,
            x,
            ubar: None,
            last: first,
            first,
            cfg,
        }
    }

    /// The places this automaton chooses among.
    pub fn actions(&self) -> &[usize] {
        &self.actions
    }

    /// The nominal strategy, aligned with [`Pla::actions`].
    pub fn x(&self) -> &[f64] {
        &self.x
    }

    /// The running average of the utility, `None` before the first one.
    pub fn ubar(&self) -> Option<f64> {
        self.ubar
    }

    /// The place taken last (set by [`Pla::new`] and [`Pla::choose`]).
    pub fn current(&self) -> usize {
        self.actions[self.last]
    }

    /// The place it started on ([`Pla::new`]'s `first`).
    pub fn first(&self) -> usize {
        self.actions[self.first]
    }

    /// Makes `place` the current place (the one [`Pla::learn`] reinforces
    /// next), without drawing; `false`, changing nothing, when it is not
    /// one of the actions.
    pub fn take(&mut self, place: usize) -> bool {
        match self.actions.iter().position(|&p| p == place) {
            Some(index) => {
                self.last = index;
                true
            }
            None => false,
        }
    }

    /// The perturbed strategy σ = (1−λ)·x + λ/|A| actually sampled.
    pub fn strategy(&self) -> Vec<f64> {
        let (scale, floor) = self.perturbation();
        self.x.iter().map(|&x| scale * x + floor).collect()
    }

    /// Draws the next action from σ with one uniform draw, remembers it for
    /// [`Pla::learn`] and returns its place index.
    pub fn choose<R: Rng + ?Sized>(&mut self, rng: &mut R) -> usize {
        self.choose_among(rng, |_| true)
    }

    /// [`Pla::choose`] over the actions whose place `allowed` accepts, σ
    /// renormalised over them (one uniform draw either way). When it
    /// accepts none, every action may be drawn.
    pub fn choose_among<R: Rng + ?Sized>(&mut self, rng: &mut R, allowed: impl Fn(usize) -> bool) -> usize {
        let (scale, floor) = self.perturbation();
        let draw: f64 = rng.random();
        let allowed_count = self.actions.iter().filter(|&&place| allowed(place)).count();
        let everything = allowed_count == 0 || allowed_count == self.actions.len();
        let open = |index: usize| everything || allowed(self.actions[index]);
        // σ sums to 1 over all actions; over some of them, the draw is
        // scaled to their share.
        let draw = if everything {
            draw
        } else {
            let share: f64 = (0..self.x.len())
                .filter(|&index| open(index))
                .map(|index| scale * self.x[index] + floor)
                .sum();
            draw * share
        };
        let mut cumulative = 0.0;
        // Rounding can leave the total a hair under 1: the last action with
        // any probability takes what is left.
        let mut chosen = None;
        for (index, &x) in self.x.iter().enumerate() {
            let p = scale * x + floor;
            if p > 0.0 && open(index) {
                chosen = Some(index);
                cumulative += p;
                if draw < cumulative {
                    break;
                }
            }
        }
        if let Some(index) = chosen {
            self.last = index;
        }
        self.current()
    }

    /// Learns from the utility `u` earned by the action taken last.
    /// Non-finite utilities (no measurement) change nothing.
    pub fn learn(&mut self, u: f64) {
        if !u.is_finite() {
            return;
        }
        let Some(ubar) = self.ubar else {
            self.ubar = Some(u);
            return;
        };
        if u > 0.0 && u >= self.cfg.threshold * ubar {
            let step = if ubar > 0.0 {
                (self.cfg.step * u / ubar).min(1.0)
            } else {
                self.cfg.step
            };
            self.reinforce(step);
        }
        let next = ubar + self.cfg.nu * (u - ubar);
        self.ubar = Some(if next.is_finite() { next } else { u });
    }

    /// x ← x + step·(e_last − x), written (1 − step)·x + step·e_last: every
    /// share shrinks by one factor and the last action takes what they gave
    /// up, so the sum stays 1 up to rounding. One pass scales and sums (in
    /// four lanes, which the compiler vectorises); `x` is renormalised only
    /// when rounding has moved the sum by more than [`SUM_DRIFT`], so most
    /// reinforcements cost no division (one step for a thousand automata of
    /// 128 actions each took three passes and 0.4 ms before).
    fn reinforce(&mut self, step: f64) {
        if step.is_nan() || step <= 0.0 {
            return;
        }
        let step = step.min(1.0);
        let keep = 1.0 - step;
        let mut lanes = [0.0f64; 4];
        let mut chunks = self.x.chunks_exact_mut(4);
        for chunk in &mut chunks {
            for (x, lane) in chunk.iter_mut().zip(&mut lanes) {
                *x *= keep;
                *lane += *x;
            }
        }
        for x in chunks.into_remainder() {
            *x *= keep;
            lanes[0] += *x;
        }
        self.x[self.last] += step;
        let total = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + step;
        if (total - 1.0).abs() <= SUM_DRIFT {
            return;
        }
        if total > 0.0 && total.is_finite() {
            self.x.iter_mut().for_each(|x| *x /= total);
        } else {
            self.x.iter_mut().for_each(|x| *x = 0.0);
            self.x[self.last] = 1.0;
        }
    }

    /// (1−λ, λ/|A|), with λ clamped into [0, 1] so σ is always a
    /// probability vector.
    fn perturbation(&self) -> (f64, f64) {
        let lambda = if self.cfg.lambda.is_finite() {
            self.cfg.lambda.clamp(0.0, 1.0)
        } else {
            0.0
        };
        (1.0 - lambda, lambda / self.actions.len() as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn choosing_among_some_actions_renormalises_over_them() {
        // x = (0.9 + 0.1/3, 0.1/3, 0.1/3) over places 4, 5, 6; λ = 0.02.
        let mut pla = Pla::new(vec![4, 5, 6], 0, PlaConfig::default());
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let draws = 30_000;
        let mut counts = [0usize; 3];
        for _ in 0..draws {
            let place = pla.choose_among(&mut rng, |place| place != 4);
            counts[place - 4] += 1;
        }
        assert_eq!(counts[0], 0, "place 4 is never drawn");
        // Places 5 and 6 had equal probability: about half each.
        let share = counts[1] as f64 / draws as f64;
        assert!((0.48..0.52).contains(&share), "{counts:?}");
        // Allowing none means allowing all; allowing all is `choose`, draw
        // for draw.
        let mut a = pla.clone();
        let (mut rng_a, mut rng_b) = (ChaCha8Rng::seed_from_u64(3), ChaCha8Rng::seed_from_u64(3));
        for _ in 0..1000 {
            assert_eq!(a.choose_among(&mut rng_a, |_| false), pla.choose(&mut rng_b));
        }
    }

    #[test]
    fn starts_focused_on_the_first_action() {
        let pla = Pla::new(vec![4, 5, 6, 7], 2, PlaConfig::default());
        assert_eq!(pla.current(), 6);
        assert_eq!(pla.ubar(), None);
        let x = pla.x();
        assert!(close(x[2], 0.9 + 0.025) && close(x[0], 0.025), "{x:?}");
        assert!(close(x.iter().sum::<f64>(), 1.0));
    }

    #[test]
    fn strategy_adds_the_perturbation() {
        let cfg = PlaConfig {
            init_focus: 1.0,
            lambda: 0.2,
            ..PlaConfig::default()
        };
        let pla = Pla::new(vec![0, 1], 0, cfg);
        let sigma = pla.strategy();
        assert!(close(sigma[0], 0.8 + 0.1) && close(sigma[1], 0.1), "{sigma:?}");
    }

    #[test]
    fn first_utility_only_sets_the_running_average() {
        let mut pla = Pla::new(vec![0, 1, 2], 0, PlaConfig::default());
        let before = pla.x().to_vec();
        pla.learn(0.8);
        assert_eq!(pla.ubar(), Some(0.8));
        assert_eq!(pla.x(), &before[..]);
    }

    #[test]
    fn reinforces_at_or_above_the_threshold_with_a_normalised_step() {
        let cfg = PlaConfig {
            init_focus: 0.0,
            step: 0.05,
            ..PlaConfig::default()
        };
        let mut pla = Pla::new(vec![0, 1], 1, cfg);
        pla.learn(1.0);
        pla.learn(1.0); // u / ubar = 1 → step = ε = 0.05
        assert!(close(pla.x()[1], 0.5 + 0.05 * 0.5), "{:?}", pla.x());
        assert!(close(pla.ubar().unwrap(), 1.0));
        pla.learn(2.0); // step = 0.05 * 2 / 1
        assert!(close(pla.x()[1], 0.525 + 0.1 * 0.475), "{:?}", pla.x());
        assert!(close(pla.ubar().unwrap(), 1.0 + 0.05));
    }

    #[test]
    fn many_reinforcements_keep_a_probability_vector_that_follows_the_update_rule() {
        // 20,000 reinforcements of random actions with random steps over
        // 131 actions (not a multiple of the four lanes), against the rule
        // x ← x + s·(e_a − x) renormalised every time.
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut pla = Pla::new((0..131).collect(), 5, PlaConfig::default());
        let mut reference = pla.x().to_vec();
        let mut largest_gap: f64 = 0.0;
        for _ in 0..20_000 {
            let action = rng.random_range(0..131);
            let step = rng.random_range(0.0..0.3);
            pla.take(action);
            pla.reinforce(step);
            for (index, x) in reference.iter_mut().enumerate() {
                *x += step * (if index == action { 1.0 } else { 0.0 } - *x);
            }
            let total: f64 = reference.iter().sum();
            reference.iter_mut().for_each(|x| *x /= total);
            let sum: f64 = pla.x().iter().sum();
            assert!((sum - 1.0).abs() <= 2.0 * SUM_DRIFT, "sum {sum}");
            assert!(pla.x().iter().all(|&x| x >= 0.0));
            for (a, b) in pla.x().iter().zip(&reference) {
                largest_gap = largest_gap.max((a - b).abs());
            }
        }
        assert!(largest_gap < 1e-10, "drifted {largest_gap} from the rule");
    }

    #[test]
    fn below_the_threshold_only_the_average_moves() {
        let mut pla = Pla::new(vec![0, 1], 0, PlaConfig::default());
        pla.learn(1.0);
        let before = pla.x().to_vec();
        pla.learn(0.97);
        assert_eq!(pla.x(), &before[..]);
        assert!(close(pla.ubar().unwrap(), 1.0 - 0.05 * 0.03));
    }

    #[test]
    fn zero_negative_and_non_finite_utilities_never_reinforce() {
        let mut pla = Pla::new(vec![0, 1], 0, PlaConfig::default());
        pla.learn(0.0);
        let before = pla.x().to_vec();
        pla.learn(0.0);
        pla.learn(-1.0);
        assert_eq!(pla.x(), &before[..]);
        let ubar = pla.ubar();
        pla.learn(f64::NAN);
        pla.learn(f64::INFINITY);
        assert_eq!(pla.ubar(), ubar);
    }

    #[test]
    fn non_positive_average_uses_the_plain_step() {
        let cfg = PlaConfig {
            init_focus: 0.0,
            step: 0.05,
            ..PlaConfig::default()
        };
        let mut pla = Pla::new(vec![0, 1], 0, cfg);
        pla.learn(-1.0);
        pla.learn(0.5);
        assert!(close(pla.x()[0], 0.5 + 0.05 * 0.5), "{:?}", pla.x());
    }

    #[test]
    fn step_is_capped_at_one() {
        let cfg = PlaConfig {
            init_focus: 0.0,
            ..PlaConfig::default()
        };
        let mut pla = Pla::new(vec![0, 1, 2], 2, cfg);
        pla.learn(1e-9);
        pla.learn(1e12);
        assert_eq!(pla.x(), &[0.0, 0.0, 1.0]);
    }

    #[test]
    fn choose_follows_the_strategy() {
        let cfg = PlaConfig {
            init_focus: 1.0,
            lambda: 0.0,
            ..PlaConfig::default()
        };
        let mut pla = Pla::new(vec![3, 9], 1, cfg);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        assert!((0..1000).all(|_| pla.choose(&mut rng) == 9));

        let mut pla = Pla::new(vec![3, 9], 0, PlaConfig { init_focus: 0.0, ..cfg });
        let picks_of_3 = (0..4000).filter(|_| pla.choose(&mut rng) == 3).count();
        assert!(
            (1800..2200).contains(&picks_of_3),
            "{picks_of_3} of 4000 on a fair coin"
        );
    }

    #[test]
    fn learn_reinforces_the_chosen_action() {
        let cfg = PlaConfig {
            init_focus: 0.0,
            lambda: 0.0,
            ..PlaConfig::default()
        };
        let mut pla = Pla::new(vec![0, 1, 2], 0, cfg);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        pla.learn(1.0);
        let place = pla.choose(&mut rng);
        let index = pla.actions().iter().position(|&p| p == place).unwrap();
        let before = pla.x()[index];
        pla.learn(1.0);
        assert!(pla.x()[index] > before);
    }
}
