//! Crowd-directed moves: a core-level choice for the learner beyond the
//! papers (`moves = "crowd"`, the default since 2026-11-25).
//!
//! ```text
//!   every learner period, from what all threads measured on the places
//!   they held (run share s = run time / runnable time, schedstat's ratio);
//!   a sleeper (hardly runnable in 9 of the last 10 periods and the last,
//!   `Naps`) holds nothing:
//!
//!   1. per core c holding k measured threads with mean share s̄:
//!        others' weight  b_c = max(0, 1/s̄ − k)     (1/s̄ = everything runnable there)
//!        remembered with its time; a core nobody holds uses its last b_c
//!        for `forget_s`, then 0 again (load moves on: look again)
//!   2. the program's CPU on c with k of its threads is
//!        P_c(k) = k / (k + b_c)                      (by weight)
//!               + (max(that, 0.9) − that) · w̄       (k ≥ 2: wake-ups)
//!      where w̄ is the mean of their wake-up weights w = min(1, slice /
//!      grain) (0 unless the others run in another scheduling group and
//!      the thread sleeps between rounds), and a newcomer would get
//!      p_c = P_c(k_c + 1) / (k_c + 1)
//!   3. threads in order of share, most crowded first:
//!        c* = the core of its area (its node for the learner) with the largest p_c, among those where
//!             the program gains at least what it loses where the thread
//!             leaves: P_c(k_c + 1) − P_c(k_c) ≥ P_a(k_a) − P_a(k_a − 1)
//!        p_c* > s · (1 + margin) ?  move there, k updated at once
//!                                   (so two threads never rush to one core)
//!        else stay
//!   4. where the threads pool their work (`Pooling`: the CPU time each
//!      works follows its run share; not so for threads that meet at
//!      barriers) and `pooled_moves` is on, each thread that did not move,
//!      most crowded first: the core of its area where the program gains most,
//!        P_c(k_c + 1) − P_c(k_c) > P_a(k_a) − P_a(k_a − 1) + margin ?
//!          move there, whatever the thread itself gets
//! ```
//!
//! The papers' automata draw a new place at random every period and
//! reinforce what measured well, so with 40 threads some move every period;
//! each move of a thread that meets its siblings at a barrier makes the
//! whole program wait for it. These moves are best responses in the papers'
//! own load game (a thread's speed is its core's capacity over the crowd
//! there): a thread moves only where the measurements say it gains by more
//! than `margin`, and an assignment none of them gains from (a Nash
//! equilibrium, such as round-robin when it is one) is left alone. The run
//! share, not the metric's speed, is what tells crowding apart: a thread
//! that blocks at barriers shows the same speed wherever it waits, but it
//! waits for a CPU only where the CPU is crowded. Threads that spin in
//! waiting code break the model (a spinning sibling crowds a core like any
//! load, yet moving it away is what lets the program progress): while a
//! program spins, the learner holds its round-robin places where its awake
//! threads have a core each, and draws otherwise (`learn.rs`).
//!
//! The program's side of the rule came from the real machine: with another
//! session's load on one CPU, autogroup gives the program half of that CPU
//! however many of its threads are there, so each thread alone gains by
//! leaving for the free CPU and the program loses the half it had (all four
//! threads of a program ended on one CPU). Selfish moves alone are the
//! papers' game; the veto keeps the ones that do not cost the program.
//!
//! Pooled work: a pipeline's stages draw from shared queues and
//! independent tasks from a shared amount of work, so what the program
//! gets counts, not what each thread gets. Beside another session's load a
//! thread alone on a loaded core gets less than a crowded free core gives
//! it, so step 3 never sends one there and the program leaves such cores
//! unused (simulated 4x8 `pipeline` C.2: 95 s against the round-robin pin's
//! 85 s). Step 4 sends it; the veto of step 3 then keeps it there. Threads
//! that meet at barriers must not go: the one sent becomes the laggard all
//! wait for. They are told apart by what they work: at a barrier every
//! thread works a round per round whatever its share, so the uncrowded ones
//! sleep; in a pool a crowded thread works less.
//!
//! Wake-ups: where the others on a core run in another scheduling group
//! (another session under autogroup, another CPU cgroup), Linux shares the
//! core between the groups, and each of the program's threads that wakes
//! preempts the other group for about a scheduler slice. Two or more
//! threads that sleep between rounds shorter than a slice then take most of
//! the core together, 0.9 measured (`wake_share`), where one alone gets its
//! group's half. Without that term the crowd sees a loaded core with one
//! thread as worth half a thread and keeps three on a free core beside it,
//! an equilibrium no single move leaves. The others' weight is still read
//! as `1/s̄ − k` where the wake-ups already hold the core (two threads at
//! 0.45 read 0.22): inverting the term there, keeping the last belief where
//! it hides the weight, did worse over the simulator's matrices
//! (docs/simulator.md, "Wake-ups against another session's load,
//! measured").
//!
//! Pure: the same inputs give the same moves.

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use crate::ThreadKey;
use crate::layout::Layout;

/// Settings of crowd-directed moves (`[learn.crowd]`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CrowdConfig {
    /// A thread moves only where it is predicted to run this share faster
    /// (at least 0): measurement noise must not move it.
    pub margin: f64,
    /// Seconds an empty core's last measured load is believed (> 0); then
    /// it is assumed idle again and may be tried.
    pub forget_s: f64,
    /// The share of a core that two or more threads waking at every slice
    /// take together from another scheduling group's program (in [0, 1]);
    /// 0 turns the wake-ups off (the crowd then shares cores by weight).
    pub wake_share: f64,
    /// On every NUMA tick of the learner's own periods, a thread may also
    /// move to a core of another node its siblings hold, where the shares
    /// promise more than the remote cost takes (`learn.rs`); off: only the
    /// NUMA level moves threads between nodes, one per NUMA period.
    pub across_nodes: bool,
    /// Where the threads' measurements say they pool their work
    /// ([`Pooling`]), a thread also moves where it loses and the program
    /// gains by `margin` of a core more than it loses where the thread
    /// leaves; off: only the selfish moves.
    pub pooled_moves: bool,
    /// Where the threads pool their work and never sleep, two threads
    /// trade places when one has run this many CPU-seconds more than the
    /// other, measured against their siblings' mean, and holds a place
    /// where it runs faster (`learn.rs`, catch-up trades); 0 turns them off.
    pub catch_up_s: f64,
}

impl Default for CrowdConfig {
    fn default() -> Self {
        CrowdConfig {
            margin: 0.15,
            forget_s: 5.0,
            wake_share: WAKE_SHARE,
            across_nodes: true,
            pooled_moves: true,
            catch_up_s: CATCH_UP_S,
        }
    }
}

/// The default of [`CrowdConfig::catch_up_s`].
const CATCH_UP_S: f64 = 1.0;

/// What one thread brings to a period's moves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Occupant {
    /// The place it held last period (and holds unless it moves).
    pub place: usize,
    /// Its run share there, `None` when not measured (new, just moved,
    /// hardly runnable): it neither moves nor tells about its core.
    pub share: Option<f64>,
    /// It sleeps ([`Naps::asleep`]: a main thread waiting in `join`, an
    /// idle worker of a pool), so it takes nothing from its core: others
    /// may come as if it were not there. A thread that is not measured
    /// because it just came still counts (it competes), and so does one
    /// that waits at barriers (it wakes every round).
    pub asleep: bool,
    /// The area it may move in: an index into the `areas` given to
    /// [`Crowd::moves`]. The learner's areas are the NUMA nodes (memory
    /// stays behind a move between nodes: that is the NUMA level's job,
    /// and on its ticks the whole machine is one area, other nodes' cores
    /// costed with [`Crowd::moves_costed`]); `bubbles+learn`'s are the
    /// places the spread gave each bubble.
    pub area: usize,
    /// How far toward [`CrowdConfig::wake_share`] its wake-ups take a core
    /// it shares with another scheduling group's load, in [0, 1]
    /// ([`wake_weight`]); 0 for a thread that does not sleep between rounds
    /// or where the others share the program's group.
    pub wakes: f64,
}

/// The default [`CrowdConfig::wake_share`]: the share of a core that two
/// or more of a program's threads that sleep between short rounds take
/// together beside another scheduling group's busy program. Measured on
/// the real machine (`scripts/session-shares`,
/// docs/results/session-shares-2026-11-27.log): four `pinlearn work aco`
/// threads pinned two per CPU beside another session's busy loop left it
/// 0.09 of its CPU; one such thread per CPU left it about half.
pub const WAKE_SHARE: f64 = 0.9;

/// A thread's wake-up weight ([`Occupant::wakes`]): `min(1, slice / grain)`
/// where the others run in another scheduling group (`wake_slice_s`, Linux's
/// slice) and the thread sleeps between rounds (`grain_s`, its run time per
/// sleep), else 0. A woken thread preempts for about one slice; for the rest
/// of its round the core is shared by weight again.
pub fn wake_weight(grain_s: Option<f64>, wake_slice_s: Option<f64>) -> f64 {
    match (grain_s, wake_slice_s) {
        (Some(grain), Some(slice)) if grain > 0.0 && slice > 0.0 && grain.is_finite() && slice.is_finite() => {
            (slice / grain).min(1.0)
        }
        _ => 0.0,
    }
}

/// The program's share of a core where `k` of its threads, with wake-up
/// weights summing to `wakes`, run beside others of weight `others`, two
/// or more waking at every slice taking `wake_share` of it.
fn program_share(k: usize, wakes: f64, others: f64, wake_share: f64) -> f64 {
    if k == 0 {
        return 0.0;
    }
    let k = k as f64;
    let by_weight = k / (k + others);
    if k >= 2.0 {
        by_weight + (by_weight.max(wake_share) - by_weight) * (wakes / k).clamp(0.0, 1.0)
    } else {
        by_weight
    }
}

/// The periods a thread was hardly runnable (no run share measured
/// although it was not new), the last one in the lowest bit; how many
/// periods were recorded, and whether it was runnable in any of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Naps {
    periods: u16,
    seen: u16,
    ran: bool,
}

/// Of the last [`NAP_WINDOW`] periods, a sleeper was hardly runnable in at
/// least this many, the last one included: a main thread in `join` wakes
/// once per thread it joins, a thread waiting at barriers every round
/// (every period or few, seen in the simulator's barrier programs: taken
/// for sleepers after one period, they lost 3-10% where another program
/// loads half of every node's cores).
const NAP_MIN: u32 = 9;
const NAP_WINDOW: u32 = 10;

/// A thread hardly runnable in every period since it was first seen, at
/// least this many of them, has not started its work yet (a pipeline's
/// later stages before the first items reach them).
const NOT_STARTED_MIN: u32 = 3;

impl Naps {
    /// Adds a period: the thread was hardly runnable in it, or not.
    pub fn record(&mut self, hardly_runnable: bool) {
        self.periods = (self.periods << 1) | u16::from(hardly_runnable);
        self.seen = self.seen.saturating_add(1);
        self.ran |= !hardly_runnable;
    }

    /// Hardly runnable in the last period and in [`NAP_MIN`] of the last
    /// [`NAP_WINDOW`].
    pub fn asleep(self) -> bool {
        self.periods & 1 == 1 && (self.periods & ((1 << NAP_WINDOW) - 1)).count_ones() >= NAP_MIN
    }

    /// Hardly runnable in every period recorded, at least
    /// [`NOT_STARTED_MIN`] of them: it has not started its work. Where it
    /// has been seen in fewer than [`NAP_WINDOW`] periods this tells a
    /// sleeper that [`Naps::asleep`] cannot yet.
    pub fn not_started(self) -> bool {
        !self.ran && u32::from(self.seen) >= NOT_STARTED_MIN
    }
}

/// Whether a program's threads pool their work (a pipeline's stages
/// drawing from shared queues, independent tasks) or meet at barriers,
/// from what every thread measures: where threads pool, the CPU time a
/// thread works follows its run share (a crowded thread does less); where
/// they meet at barriers, every thread works a round per round whatever its
/// share (the uncrowded ones sleep while they wait for the laggard). Within
/// a round the uncrowded ones are ahead, so each thread's time worked is
/// summed over spans of [`POOLING_SPAN`] periods, longer than the rounds
/// of the barrier programs measured.
///
/// ```text
///   per thread, over a span: mean run share s, CPU time worked c
///   at the end of a span with 4+ threads measured in most of its periods
///   and shares that spread (standard deviation >= MIN_SHARE_SPREAD):
///     r = correlation(s, c) over them              (0 where c is the same)
///     r̄ ← r̄ + POOLING_RATE · (r − r̄)               (the first r as it is)
///   pooled = POOLING_SPANS such spans seen and r̄ >= POOLED_CORRELATION
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pooling {
    /// Per thread in the span so far: its shares' sum and count, its CPU
    /// time worked and the periods of it.
    span: BTreeMap<ThreadKey, SpanSums>,
    periods: u32,
    correlation: Option<f64>,
    spans: u32,
}

/// One thread's sums over a span ([`Pooling`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct SpanSums {
    shares: f64,
    shared: u32,
    worked: f64,
    periods: u32,
}

/// Periods summed before the shares and times worked are compared.
const POOLING_SPAN: u32 = 40;
/// Spans with spread shares before [`Pooling::pooled`] may say yes.
const POOLING_SPANS: u32 = 2;
/// Weight of each new span's correlation in the running average.
const POOLING_RATE: f64 = 0.25;
/// The averaged correlation above which the threads pool their work.
const POOLED_CORRELATION: f64 = 0.7;
/// CPU-seconds per second: times worked that spread less than this are
/// the same.
const MIN_WORKED_SPREAD: f64 = 1e-6;
/// Run shares that spread less than this say nothing of what follows them.
const MIN_SHARE_SPREAD: f64 = 0.05;
/// Threads measured, at least, for a span to tell whether they pool their
/// work (and for the learner to tell that none of them sleeps).
pub(crate) const POOLING_MIN_THREADS: usize = 4;

impl Pooling {
    /// Adds a period: `(thread, run share, CPU time worked per second)` of
    /// every awake thread measured; a thread hardly runnable has no share
    /// but still its (small) time worked: leaving those periods out would
    /// count a thread that sleeps at barriers only when it works.
    pub fn record(&mut self, measured: &[(ThreadKey, Option<f64>, f64)]) {
        for &(key, share, worked) in measured {
            if !worked.is_finite() {
                continue;
            }
            let sums = self.span.entry(key).or_default();
            sums.worked += worked;
            sums.periods += 1;
            if let Some(share) = share.filter(|s| s.is_finite()) {
                sums.shares += share;
                sums.shared += 1;
            }
        }
        self.periods += 1;
        if self.periods < POOLING_SPAN {
            return;
        }
        let span = std::mem::take(&mut self.span);
        self.periods = 0;
        let threads: Vec<(f64, f64)> = span
            .values()
            .filter(|sums| 2 * sums.periods > POOLING_SPAN && sums.shared > 0)
            .map(|sums| {
                (
                    sums.shares / f64::from(sums.shared),
                    sums.worked / f64::from(sums.periods),
                )
            })
            .collect();
        let n = threads.len() as f64;
        if threads.len() < POOLING_MIN_THREADS {
            return;
        }
        let (share_mean, worked_mean) = threads
            .iter()
            .fold((0.0, 0.0), |(s, w), &(share, worked)| (s + share / n, w + worked / n));
        let (mut share_var, mut worked_var, mut covariance) = (0.0, 0.0, 0.0);
        for &(share, worked) in &threads {
            share_var += (share - share_mean).powi(2);
            worked_var += (worked - worked_mean).powi(2);
            covariance += (share - share_mean) * (worked - worked_mean);
        }
        if (share_var / n).sqrt() < MIN_SHARE_SPREAD {
            return;
        }
        // Times worked that do not spread at all follow nothing (and a
        // correlation of rounding errors would be any number).
        let r = if (worked_var / n).sqrt() >= MIN_WORKED_SPREAD {
            covariance / (share_var * worked_var).sqrt()
        } else {
            0.0
        };
        self.correlation = Some(match self.correlation {
            Some(average) => average + POOLING_RATE * (r - average),
            None => r,
        });
        self.spans = self.spans.saturating_add(1);
    }

    /// Linux placed the threads meanwhile: the span so far is dropped. A
    /// barrier program's threads are mid-round when the places change, and
    /// those the learner's places leave uncrowded work off that lag in its
    /// first periods, more than their siblings: spans across such changes
    /// showed them working a fifth more and took a barrier for a pool.
    pub fn interrupt(&mut self) {
        self.span.clear();
        self.periods = 0;
    }

    /// The threads pool their work, as far as the spans seen say.
    pub fn pooled(&self) -> bool {
        self.spans >= POOLING_SPANS && self.correlation.is_some_and(|r| r >= POOLED_CORRELATION)
    }
}

/// Every node's cores, in layout order: the learner's areas.
pub fn node_areas(layout: &Layout) -> Vec<Vec<usize>> {
    (0..layout.nodes())
        .map(|node| layout.cores_of(node).collect())
        .collect()
}

/// The others' load last measured on every core place.
#[derive(Clone, Debug, Default)]
pub struct Crowd {
    /// Per place (indexed like `Layout::places`): others' weight and when
    /// it was measured.
    others: Vec<Option<(f64, f64)>>,
    /// The program's threads pool their work ([`Pooling`]): a thread also
    /// moves where it loses and the program gains.
    pub pooled: bool,
}

impl Crowd {
    /// The others' weight believed on core place `place` at `now_s`: the
    /// last measured while the program holds it (`held`), else for
    /// `cfg.forget_s` after it was measured, then 0 (assumed idle).
    pub fn others_on(&self, place: usize, now_s: f64, cfg: &CrowdConfig, held: bool) -> f64 {
        let within_s = if held { f64::INFINITY } else { cfg.forget_s };
        self.others_measured_within(place, now_s, within_s).unwrap_or(0.0)
    }

    /// Whether another program's load was measured on core place `place`
    /// less than `within_s` before `now_s` (whatever `forget_s` says).
    pub fn loaded_within(&self, place: usize, now_s: f64, within_s: f64) -> bool {
        self.others_measured_within(place, now_s, within_s)
            .is_some_and(|others| others > 0.0)
    }

    /// The others' weight last measured on `place`, if that was less than
    /// `within_s` before `now_s`.
    fn others_measured_within(&self, place: usize, now_s: f64, within_s: f64) -> Option<f64> {
        let (others, at) = self.others.get(place).copied().flatten()?;
        (now_s - at < within_s).then_some(others)
    }

    /// The first time after `now_s` at which the load believed on a core
    /// none of the program's threads holds (none of `places`, the threads'
    /// places) is forgotten, so that the core looks idle and may be tried
    /// again; `None` when no such core carries a load still believed.
    pub fn next_forgetting(&self, now_s: f64, cfg: &CrowdConfig, places: &[usize]) -> Option<f64> {
        let mut held = vec![false; self.others.len()];
        for &place in places {
            if let Some(slot) = held.get_mut(place) {
                *slot = true;
            }
        }
        self.others
            .iter()
            .zip(held)
            .filter_map(|(belief, held)| {
                let (others, at) = (*belief)?;
                let until = at + cfg.forget_s;
                (others > 0.0 && until > now_s && !held).then_some(until)
            })
            .min_by(f64::total_cmp)
    }

    /// Records the others' weight on every core the awake `occupants` hold
    /// where one of them was measured, and returns how many of them hold
    /// each place (measured or not: an unmeasured one just arrived and
    /// competes) and the sum of their wake-up weights there.
    fn measure(&mut self, layout: &Layout, occupants: &[Occupant], now_s: f64) -> (Vec<usize>, Vec<f64>) {
        let places = layout.places().len();
        self.others.resize(places, None);
        let mut crowd = vec![0usize; places];
        let mut wakes = vec![0.0f64; places];
        let mut share_sum = vec![0.0f64; places];
        let mut measured = vec![0usize; places];
        for occupant in occupants.iter().filter(|o| layout.is_core(o.place) && !o.asleep) {
            let wake = occupant.wakes.clamp(0.0, 1.0);
            crowd[occupant.place] += 1;
            wakes[occupant.place] += wake;
            if let Some(share) = usable(occupant.share) {
                share_sum[occupant.place] += share;
                measured[occupant.place] += 1;
            }
        }
        for place in (0..places).filter(|&p| measured[p] > 0) {
            let mean = share_sum[place] / measured[place] as f64;
            self.others[place] = Some(((1.0 / mean - measured[place] as f64).max(0.0), now_s));
        }
        (crowd, wakes)
    }

    /// Measures as [`Crowd::moves`] does, then believes on every core of
    /// an area that no awake occupant holds the mean of the others' weights
    /// just measured on the area's held cores (an area where nothing was
    /// measured keeps its beliefs). Linux leaves some of a loaded node's
    /// cores without the program's threads: they are likely loaded like
    /// the rest of the node, not idle.
    pub fn assume_area_means(&mut self, layout: &Layout, areas: &[Vec<usize>], occupants: &[Occupant], now_s: f64) {
        let (crowd, _) = self.measure(layout, occupants, now_s);
        for area in areas {
            let fresh: Vec<f64> = area
                .iter()
                .filter_map(|&core| match self.others.get(core).copied().flatten() {
                    Some((others, at)) if at == now_s && crowd[core] > 0 => Some(others),
                    _ => None,
                })
                .collect();
            if fresh.is_empty() {
                continue;
            }
            let mean = fresh.iter().sum::<f64>() / fresh.len() as f64;
            for &core in area.iter().filter(|&&core| crowd[core] == 0) {
                if let Some(slot) = self.others.get_mut(core) {
                    *slot = Some((mean, now_s));
                }
            }
        }
    }

    /// The new place of every occupant (aligned with `occupants`), at time
    /// `now_s`; an occupant moves only to a core of `areas[occupant.area]`.
    pub fn moves(
        &mut self,
        layout: &Layout,
        cfg: &CrowdConfig,
        areas: &[Vec<usize>],
        occupants: &[Occupant],
        now_s: f64,
    ) -> Vec<usize> {
        self.moves_costed(layout, cfg, areas, occupants, now_s, |_, _| 1.0)
    }

    /// As [`Crowd::moves`], with the share a core promises divided by
    /// `cost(occupant, core)`, the occupant's index in `occupants` and the
    /// core: how many times slower the thread would run there (away from
    /// its memory, say). An infinite cost rules the core out for it; a cost
    /// below 1 (or not a number) counts as 1: no core promises more than
    /// the program's share of it, which lets a whole area be passed over at
    /// once.
    pub fn moves_costed(
        &mut self,
        layout: &Layout,
        cfg: &CrowdConfig,
        areas: &[Vec<usize>],
        occupants: &[Occupant],
        now_s: f64,
        cost: impl Fn(usize, usize) -> f64,
    ) -> Vec<usize> {
        let places = layout.places().len();
        let is_core = |place: usize| layout.is_core(place);
        let (mut crowd, mut wakes) = self.measure(layout, occupants, now_s);
        // A held core's others are those just measured (or, when none of
        // its threads was, the last known); an empty one's are believed for
        // `forget_s`.
        let others: Vec<f64> = (0..places)
            .map(|place| self.others_on(place, now_s, cfg, crowd[place] > 0))
            .collect();

        // The measured threads with their shares, most crowded first (key
        // order on ties).
        let mut order: Vec<(f64, usize)> = occupants
            .iter()
            .enumerate()
            .filter_map(|(index, o)| usable(o.share).map(|share| (share, index)))
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut placed: Vec<usize> = occupants.iter().map(|o| o.place).collect();
        let gain = 1.0 + cfg.margin.max(0.0);
        // The most a newcomer could get on each core, 1 / (k + 1) (the
        // program's share of a core is at most 1): most cores are passed
        // over on it alone, without working out their promise.
        let mut cap: Vec<f64> = crowd.iter().map(|&k| 1.0 / (k as f64 + 1.0)).collect();
        // The largest cap of each area: a thread whose bar it does not pass
        // stays without a look at any core (with a thousand threads settled,
        // nearly all of them).
        let mut area_cap: Vec<f64> = areas.iter().map(|area| largest_in(&cap, area)).collect();
        for &(share, index) in &order {
            let occupant = occupants[index];
            let Some(area) = areas.get(occupant.area) else {
                continue;
            };
            if area_cap[occupant.area] <= share * gain {
                continue;
            }
            let wake = if occupant.asleep {
                0.0
            } else {
                occupant.wakes.clamp(0.0, 1.0)
            };
            // The program's CPU on a core with k of its threads, wake-up
            // weights summing to w.
            let program = |place: usize, k: usize, w: f64| program_share(k, w, others[place], cfg.wake_share);
            // What the program loses where the thread leaves, and gains
            // where it goes.
            let loss = if is_core(occupant.place) {
                let (k, w) = (crowd[occupant.place], wakes[occupant.place]);
                program(occupant.place, k, w) - program(occupant.place, k.saturating_sub(1), (w - wake).max(0.0))
            } else {
                share
            };
            let with_it = |core: usize| program(core, crowd[core] + 1, wakes[core] + wake);
            let gain_at = |core: usize| with_it(core) - program(core, crowd[core], wakes[core]);
            let newcomer = |core: usize| with_it(core) / (crowd[core] as f64 + 1.0);
            // The first best core on ties, among those where the program
            // loses nothing by the move, if it promises more than the
            // thread has by the margin. A core that promises no more than
            // the best so far (or than that bar), or could not (`cap`), is
            // passed over before its gain is worked out: the same choice, at
            // a fraction of the cost with a thousand threads.
            let mut best: Option<usize> = None;
            let mut bar = share * gain;
            for &core in area {
                let worth = match cost(index, core) {
                    cost if cost > 1.0 => 1.0 / cost,
                    _ => 1.0,
                };
                if cap[core] * worth <= bar || !is_core(core) || core == occupant.place {
                    continue;
                }
                let promised = newcomer(core) * worth;
                if promised > bar && gain_at(core) >= loss {
                    best = Some(core);
                    bar = promised;
                }
            }
            if let Some(core) = best {
                if is_core(occupant.place) {
                    crowd[occupant.place] -= 1;
                    wakes[occupant.place] = (wakes[occupant.place] - wake).max(0.0);
                    cap[occupant.place] = 1.0 / (crowd[occupant.place] as f64 + 1.0);
                }
                crowd[core] += 1;
                wakes[core] += wake;
                cap[core] = 1.0 / (crowd[core] as f64 + 1.0);
                placed[index] = core;
                for (max, area) in area_cap.iter_mut().zip(areas) {
                    *max = largest_in(&cap, area);
                }
            }
        }
        if self.pooled {
            self.pooled_moves(
                cfg,
                areas,
                occupants,
                &order,
                &others,
                (&mut crowd, &mut wakes),
                &mut placed,
                |index, core| is_core(core) && cost(index, core) <= 1.0,
            );
        }
        placed
    }

    /// Where the program's threads pool their work, a thread that has not
    /// moved goes where the program gains by `margin` of a core more than
    /// it loses where the thread leaves, whatever the thread gets there: a
    /// thread alone on a core another session loads gets less than a
    /// crowded free core gives it, so no thread goes there for itself, and
    /// the program leaves that core unused. The selfish moves' veto keeps it
    /// there (leaving would cost the program what it gained).
    #[allow(clippy::too_many_arguments)]
    fn pooled_moves(
        &self,
        cfg: &CrowdConfig,
        areas: &[Vec<usize>],
        occupants: &[Occupant],
        order: &[(f64, usize)],
        others: &[f64],
        (crowd, wakes): (&mut [usize], &mut [f64]),
        placed: &mut [usize],
        may_go: impl Fn(usize, usize) -> bool,
    ) {
        let program = |place: usize, k: usize, w: f64| program_share(k, w, others[place], cfg.wake_share);
        // What the program could still gain on each core at most (its share
        // of a core is at most 1): most cores, and most threads, are passed
        // over on it alone.
        let mut room: Vec<f64> = (0..crowd.len())
            .map(|core| 1.0 - program(core, crowd[core], wakes[core]))
            .collect();
        let mut most_room = room.iter().copied().fold(0.0, f64::max);
        // What one more thread could add on each core at most (a thread's
        // wake-up weight is at most 1, and the program's share grows with
        // it), and its largest over each area: a thread whose bar that
        // does not pass looks at no core.
        let most_gained = |crowd: &[usize], wakes: &[f64], core: usize| {
            program(core, crowd[core] + 1, wakes[core] + 1.0) - program(core, crowd[core], wakes[core])
        };
        let mut gained_at_most: Vec<f64> = (0..crowd.len()).map(|core| most_gained(crowd, wakes, core)).collect();
        let mut area_gain: Vec<f64> = areas.iter().map(|area| largest_in(&gained_at_most, area)).collect();
        let margin = cfg.margin.max(0.0);
        for &(_, index) in order {
            let occupant = occupants[index];
            let from = occupant.place;
            if most_room <= margin {
                break;
            }
            if placed[index] != from || occupant.asleep || from >= crowd.len() || crowd[from] == 0 {
                continue;
            }
            let Some(area) = areas.get(occupant.area) else {
                continue;
            };
            let wake = occupant.wakes.clamp(0.0, 1.0);
            let (k, w) = (crowd[from], wakes[from]);
            let loss = program(from, k, w) - program(from, k - 1, (w - wake).max(0.0));
            let mut best = None;
            let mut bar = loss + margin;
            if most_room <= bar || area_gain[occupant.area] <= bar {
                continue;
            }
            for &core in area {
                if core >= crowd.len() || room[core] <= bar || core == from || !may_go(index, core) {
                    continue;
                }
                let gained =
                    program(core, crowd[core] + 1, wakes[core] + wake) - program(core, crowd[core], wakes[core]);
                if gained > bar {
                    best = Some(core);
                    bar = gained;
                }
            }
            if let Some(core) = best {
                crowd[from] -= 1;
                wakes[from] = (wakes[from] - wake).max(0.0);
                crowd[core] += 1;
                wakes[core] += wake;
                placed[index] = core;
                for place in [from, core] {
                    room[place] = 1.0 - program(place, crowd[place], wakes[place]);
                    gained_at_most[place] = most_gained(crowd, wakes, place);
                }
                most_room = room.iter().copied().fold(0.0, f64::max);
                for (max, area) in area_gain.iter_mut().zip(areas) {
                    *max = largest_in(&gained_at_most, area);
                }
            }
        }
    }
}

/// The largest of `per_place`'s values over the places of `area` (places
/// it has no value for left out); minus infinity for an empty area, which
/// no bar passes.
fn largest_in(per_place: &[f64], area: &[usize]) -> f64 {
    area.iter()
        .filter_map(|&place| per_place.get(place).copied())
        .fold(f64::NEG_INFINITY, f64::max)
}

/// A share the moves can use: finite, in (0, 1].
pub(crate) fn usable(share: Option<f64>) -> Option<f64> {
    share.filter(|s| s.is_finite() && *s > 0.0).map(|s| s.min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(place: usize, share: Option<f64>) -> Occupant {
        Occupant {
            place,
            share,
            area: 0,
            asleep: false,
            wakes: 0.0,
        }
    }

    #[test]
    fn a_core_the_program_does_not_hold_counts_as_loaded_like_its_node() {
        // Two nodes of two cores (places 0 1 | 3 4). On node 0 a thread
        // alone on core 0 gets a third of it (others weigh 2); core 1 is
        // not held. Node 1 measured nothing: its cores stay unknown (idle).
        let layout = Layout::uniform(2, 2);
        let mut crowd = Crowd::default();
        let cfg = CrowdConfig::default();
        crowd.assume_area_means(&layout, &node_areas(&layout), &[at(0, Some(1.0 / 3.0))], 1.0);
        assert!((crowd.others_on(1, 1.0, &cfg, false) - 2.0).abs() < 1e-9);
        assert_eq!(crowd.others_on(3, 1.0, &cfg, false), 0.0);
        assert_eq!(crowd.others_on(4, 1.0, &cfg, false), 0.0);
    }

    #[test]
    fn a_crowded_thread_moves_to_an_idle_core_and_one_alone_stays() {
        // One node, cores 0 1 2 (place 3 the node): two threads share
        // core 0, one is alone on core 1, core 2 is empty.
        let layout = Layout::uniform(1, 3);
        let mut crowd = Crowd::default();
        let moved = crowd.moves(
            &layout,
            &CrowdConfig::default(),
            &node_areas(&layout),
            &[at(0, Some(0.5)), at(0, Some(0.5)), at(1, Some(1.0))],
            0.0,
        );
        assert_eq!(moved, vec![2, 0, 1], "one of the pair goes, the other stays");
    }

    #[test]
    fn a_thread_beside_a_load_moves_to_a_core_where_a_sibling_only_sleeps() {
        // One node, cores 0 and 1: a thread has half of core 0 (another
        // program has the rest); the main thread sleeps in join on core 1
        // (measured hardly runnable). Found on the real machine: the worker
        // stayed beside the load with core 1 idle until the end of the run.
        let layout = Layout::uniform(1, 2);
        let sleeper = Occupant {
            asleep: true,
            ..at(1, None)
        };
        let moved = Crowd::default().moves(
            &layout,
            &CrowdConfig::default(),
            &node_areas(&layout),
            &[at(0, Some(0.5)), sleeper],
            0.0,
        );
        assert_eq!(moved, vec![1, 1], "the worker takes the sleeper's core");
        // Not measured because it just came, the sibling competes: the worker stays.
        let moved = Crowd::default().moves(
            &layout,
            &CrowdConfig::default(),
            &node_areas(&layout),
            &[at(0, Some(0.5)), at(1, None)],
            0.0,
        );
        assert_eq!(moved, vec![0, 1]);
    }

    #[test]
    fn a_second_waking_thread_joins_a_core_another_group_loads() {
        // One node, cores 0 and 1: a thread has half of core 0 (another
        // session's program has the rest), three share core 1.
        let layout = Layout::uniform(1, 2);
        let threads = |wakes: f64| {
            [
                at(0, Some(0.5)),
                at(1, Some(0.33)),
                at(1, Some(0.33)),
                at(1, Some(0.33)),
            ]
            .map(|o| Occupant { wakes, ..o })
        };
        let moves = |wakes: f64| {
            Crowd::default().moves(
                &layout,
                &CrowdConfig::default(),
                &node_areas(&layout),
                &threads(wakes),
                0.0,
            )
        };
        // By weight a second thread on core 0 would get a third: it stays.
        assert_eq!(moves(0.0), vec![0, 1, 1, 1]);
        // Threads that wake at every slice take 0.9 of core 0 together.
        assert_eq!(moves(1.0), vec![0, 0, 1, 1]);
        // Rounds five slices long: 0.71 of it, 0.36 each, within the margin.
        assert_eq!(moves(0.2), vec![0, 1, 1, 1]);
    }

    #[test]
    fn the_wake_up_weight_is_the_slice_over_the_grain_where_the_others_are_apart() {
        assert_eq!(wake_weight(Some(0.3e-3), Some(1.5e-3)), 1.0);
        assert!((wake_weight(Some(6e-3), Some(1.5e-3)) - 0.25).abs() < 1e-12);
        assert_eq!(wake_weight(None, Some(1.5e-3)), 0.0, "it never slept");
        assert_eq!(wake_weight(Some(0.3e-3), None), 0.0, "the others share its group");
        assert_eq!(wake_weight(Some(0.0), Some(1.5e-3)), 0.0);
        assert_eq!(wake_weight(Some(f64::NAN), Some(1.5e-3)), 0.0);
    }

    #[test]
    fn a_sleeper_is_one_hardly_runnable_in_nine_of_its_last_ten_periods_and_the_last() {
        let mut naps = Naps::default();
        for _ in 0..8 {
            naps.record(true);
        }
        assert!(!naps.asleep(), "8 periods");
        naps.record(true);
        assert!(naps.asleep(), "9 periods");
        naps.record(false);
        assert!(!naps.asleep(), "awake in the last period");
        naps.record(true);
        assert!(naps.asleep(), "9 of the last 10 and the last");
        naps.record(true);
        naps.record(false);
        naps.record(true);
        assert!(!naps.asleep(), "8 of the last 10");
    }

    #[test]
    fn a_thread_not_started_was_hardly_runnable_in_every_one_of_three_or_more_periods() {
        let mut naps = Naps::default();
        assert!(!naps.not_started(), "never seen");
        naps.record(true);
        naps.record(true);
        assert!(!naps.not_started(), "2 periods");
        naps.record(true);
        assert!(naps.not_started(), "3 periods, all of them");
        assert!(!naps.asleep(), "too few for a sleeper");
        naps.record(false);
        naps.record(true);
        assert!(!naps.not_started(), "it ran once");
        let mut long = Naps::default();
        for _ in 0..40 {
            long.record(true);
        }
        assert!(long.not_started() && long.asleep(), "more periods than the bits hold");
        let mut late = Naps::default();
        late.record(false);
        for _ in 0..40 {
            late.record(true);
        }
        assert!(late.asleep(), "asleep since");
        assert!(!late.not_started(), "it ran in its first period, long ago");
    }

    #[test]
    fn a_loaded_core_left_behind_is_forgotten_after_forget_s() {
        // One node, cores 0 and 1: a thread measured half of core 0 (another
        // program has the rest), then moved to core 1, which it has alone.
        let layout = Layout::uniform(1, 2);
        let cfg = CrowdConfig::default();
        let areas = node_areas(&layout);
        let mut crowd = Crowd::default();
        crowd.moves(&layout, &cfg, &areas, &[at(0, Some(0.5))], 10.0);
        crowd.moves(&layout, &cfg, &areas, &[at(1, Some(1.0))], 11.0);
        let on_core_1 = [1];
        assert_eq!(crowd.next_forgetting(11.0, &cfg, &on_core_1), Some(10.0 + cfg.forget_s));
        assert_eq!(
            crowd.next_forgetting(10.0 + cfg.forget_s, &cfg, &on_core_1),
            None,
            "forgotten"
        );
        // Held cores are not forgotten, and an idle core has nothing to forget.
        assert_eq!(crowd.next_forgetting(11.0, &cfg, &[0, 1]), None);
        let mut idle = Crowd::default();
        idle.moves(&layout, &cfg, &areas, &[at(0, Some(1.0))], 10.0);
        assert_eq!(idle.next_forgetting(11.0, &cfg, &on_core_1), None);
    }

    #[test]
    fn where_threads_pool_their_work_one_goes_to_a_loaded_core_it_loses_by() {
        // One node of four cores: cores 0 and 1 carry another program's
        // load (a thread alone there measured a quarter of the core), cores
        // 2 and 3 hold two of the program's threads each.
        let layout = Layout::uniform(1, 4);
        let cfg = CrowdConfig::default();
        let areas = node_areas(&layout);
        let mut crowd = Crowd::default();
        crowd.moves(&layout, &cfg, &areas, &[at(0, Some(0.25)), at(1, Some(0.25))], 0.0);
        let pairs = [at(2, Some(0.5)), at(2, Some(0.5)), at(3, Some(0.5)), at(3, Some(0.5))];
        // Each alone on a loaded core would get 0.25 against 0.5 now: no
        // thread goes for itself.
        assert_eq!(
            crowd.clone().moves(&layout, &cfg, &areas, &pairs, 1.0),
            vec![2, 2, 3, 3]
        );
        // Pooled: the program gains a quarter of a core on each loaded core
        // and loses nothing on the free ones.
        let mut pooled = Crowd {
            pooled: true,
            ..crowd.clone()
        };
        assert_eq!(pooled.moves(&layout, &cfg, &areas, &pairs, 1.0), vec![0, 2, 1, 3]);
        // There, the veto keeps them: leaving would cost the program the
        // quarter it gained, though each would run twice as fast.
        let spread = [at(0, Some(0.25)), at(2, Some(1.0)), at(1, Some(0.25)), at(3, Some(1.0))];
        assert_eq!(pooled.moves(&layout, &cfg, &areas, &spread, 2.0), vec![0, 2, 1, 3]);
        // A gain below the margin (a core whose load leaves a thread 0.1)
        // is not worth a move.
        let mut heavy = Crowd {
            pooled: true,
            ..Crowd::default()
        };
        heavy.moves(&layout, &cfg, &areas, &[at(0, Some(0.1)), at(1, Some(0.1))], 0.0);
        assert_eq!(heavy.moves(&layout, &cfg, &areas, &pairs, 1.0), vec![2, 2, 3, 3]);
    }

    /// `periods` periods of four threads, two crowded (share 0.4) and two not
    /// (share 1.0), each working `worked(share)` CPU-seconds per second.
    fn pooling_after(periods: u32, worked: impl Fn(f64) -> f64) -> Pooling {
        let mut pooling = Pooling::default();
        for period in 0..periods {
            // Measurement noise, the same for every run of the test.
            let noise = |key: u64| 1.0 + 0.02 * (((period as u64 * 7 + key * 13) % 5) as f64 - 2.0);
            let measured: Vec<(ThreadKey, Option<f64>, f64)> = [0.4, 0.4, 1.0, 1.0]
                .iter()
                .zip(1u64..)
                .map(|(&share, key)| (key, Some(share), worked(share) * noise(key)))
                .collect();
            pooling.record(&measured);
        }
        pooling
    }

    #[test]
    fn threads_pool_their_work_where_what_they_work_follows_their_share() {
        let spans = POOLING_SPAN * POOLING_SPANS;
        // Independent work or a pipeline's bottleneck stage: always runnable.
        assert!(pooling_after(spans, |share| share).pooled());
        assert!(!pooling_after(spans - 1, |share| share).pooled(), "too soon to tell");
        // Threads at a barrier: everyone works what the laggards work.
        assert!(!pooling_after(4 * spans, |_| 0.4).pooled());
        // Shares that do not spread tell nothing.
        let mut alike = Pooling::default();
        for _ in 0..spans {
            alike.record(&[
                (1, Some(0.5), 0.5),
                (2, Some(0.5), 0.5),
                (3, Some(0.5), 0.5),
                (4, Some(0.5), 0.2),
            ]);
        }
        assert!(!alike.pooled());
        // Nor do three threads.
        let mut three = Pooling::default();
        for _ in 0..spans {
            three.record(&[(1, Some(0.4), 0.4), (2, Some(1.0), 1.0), (3, Some(1.0), 1.0)]);
        }
        assert!(!three.pooled());
    }

    #[test]
    fn a_span_that_linux_s_window_interrupts_is_dropped() {
        let mut pooling = pooling_after(POOLING_SPAN * POOLING_SPANS - 1, |share| share);
        pooling.interrupt();
        let one = [
            (1, Some(0.4), 0.4),
            (2, Some(0.4), 0.4),
            (3, Some(1.0), 1.0),
            (4, Some(1.0), 1.0),
        ];
        pooling.record(&one);
        assert!(!pooling.pooled(), "the last span started over");
        for _ in 1..POOLING_SPAN {
            pooling.record(&one);
        }
        assert!(pooling.pooled());
    }

    #[test]
    fn a_thread_hardly_runnable_in_a_period_still_counts_what_it_worked() {
        // Threads at a barrier whose uncrowded ones slept through every
        // other period (no run share then): counted only when measured,
        // they would seem to work twice what the laggards do.
        let mut pooling = Pooling::default();
        for period in 0..POOLING_SPAN * POOLING_SPANS * 2 {
            let asleep = period % 2 == 0;
            let free = |key| {
                if asleep {
                    (key, None, 0.0)
                } else {
                    (key, Some(1.0), 0.8)
                }
            };
            pooling.record(&[(1, Some(0.4), 0.4), (2, Some(0.41), 0.4), free(3), free(4)]);
        }
        assert!(!pooling.pooled());
    }

    #[test]
    fn a_nash_assignment_is_left_alone() {
        // Two threads per core on two cores, a load beside the pair on
        // core 0: moving to core 1 would give 1/3 against 0.3 now, less
        // than the margin.
        let layout = Layout::uniform(1, 2);
        let mut crowd = Crowd::default();
        let occupants = [at(0, Some(0.3)), at(0, Some(0.3)), at(1, Some(0.5)), at(1, Some(0.5))];
        assert_eq!(
            crowd.moves(&layout, &CrowdConfig::default(), &node_areas(&layout), &occupants, 0.0),
            vec![0, 0, 1, 1]
        );
    }

    #[test]
    fn a_loaded_core_is_remembered_then_tried_again() {
        let layout = Layout::uniform(1, 2);
        let cfg = CrowdConfig::default();
        let mut crowd = Crowd::default();
        // A thread alone on core 0 gets a third of it: two others run there.
        assert_eq!(
            crowd.moves(
                &layout,
                &cfg,
                &node_areas(&layout),
                &[at(0, Some(0.34)), at(1, Some(0.5)), at(1, Some(0.5))],
                0.0
            ),
            vec![0, 1, 1]
        );
        // It leaves core 0 (say the learner's NUMA level moved it): core 1's
        // threads do not go to core 0 while its load is remembered ...
        let two = [at(1, Some(0.5)), at(1, Some(0.5))];
        assert_eq!(crowd.moves(&layout, &cfg, &node_areas(&layout), &two, 1.0), vec![1, 1]);
        // ... and try it once it is forgotten.
        assert_eq!(
            crowd.moves(&layout, &cfg, &node_areas(&layout), &two, 1.0 + cfg.forget_s),
            vec![0, 1]
        );
    }

    #[test]
    fn unmeasured_threads_stay_and_count_where_they_are() {
        let layout = Layout::uniform(1, 2);
        let mut crowd = Crowd::default();
        // A new thread on core 1 (no share yet): the crowded one on core 0
        // would be its second there, 1/2, against 0.45 now: not enough.
        let occupants = [at(0, Some(0.45)), at(0, Some(0.45)), at(1, None)];
        assert_eq!(
            crowd.moves(&layout, &CrowdConfig::default(), &node_areas(&layout), &occupants, 0.0),
            vec![0, 0, 1]
        );
    }

    #[test]
    fn a_move_that_costs_the_program_its_share_of_a_loaded_core_is_not_made() {
        // Two threads beside a load on core 0 get 0.17 each, two on core 1
        // get 0.47: a third thread on core 1 would get 0.32, more than
        // 0.17, but the program would gain 0.02 of core 1 and lose 0.14 of
        // core 0.
        let layout = Layout::uniform(1, 2);
        let mut crowd = Crowd::default();
        let occupants = [
            at(0, Some(0.17)),
            at(0, Some(0.17)),
            at(1, Some(0.47)),
            at(1, Some(0.47)),
        ];
        assert_eq!(
            crowd.moves(&layout, &CrowdConfig::default(), &node_areas(&layout), &occupants, 0.0),
            vec![0, 0, 1, 1]
        );
    }

    #[test]
    fn moves_stay_inside_the_thread_s_area() {
        // Two nodes of one core each, the areas the nodes: a crowded
        // thread on node 0 has no other core in its node (the learner
        // crosses on NUMA ticks only, with the whole machine as its area:
        // `moves_costed`).
        let layout = Layout::uniform(2, 1);
        let mut crowd = Crowd::default();
        let occupants = [at(0, Some(0.3)), at(0, Some(0.3))];
        assert_eq!(
            crowd.moves(&layout, &CrowdConfig::default(), &node_areas(&layout), &occupants, 0.0),
            vec![0, 0]
        );
    }

    #[test]
    fn a_core_that_costs_more_must_promise_that_many_times_more() {
        // Two nodes of one core: two threads beside a load of weight 2 on
        // node 0's core get a quarter each, node 1's core is idle. Across
        // at a cost of 2 the idle core's whole share counts as half, more
        // than 0.25 by the margin: one thread goes (the second would leave
        // the first's core to the load and gain nothing); at a cost of 4
        // it counts as a quarter, and an infinite cost rules it out.
        let layout = Layout::uniform(2, 1);
        let far = layout.cores_of(1).next().unwrap();
        let all = vec![vec![0, far]];
        let occupants = [at(0, Some(0.25)), at(0, Some(0.25))];
        for (cost, expected) in [
            (1.0, vec![far, 0]),
            (2.0, vec![far, 0]),
            (4.0, vec![0, 0]),
            (f64::INFINITY, vec![0, 0]),
        ] {
            let mut crowd = Crowd::default();
            let moved = crowd.moves_costed(&layout, &CrowdConfig::default(), &all, &occupants, 0.0, |_, core| {
                if core == far { cost } else { 1.0 }
            });
            assert_eq!(moved, expected, "cost {cost}");
        }
        // `moves` is the cost of 1 everywhere.
        assert_eq!(
            Crowd::default().moves(&layout, &CrowdConfig::default(), &all, &occupants, 0.0),
            vec![far, 0]
        );
    }

    #[test]
    fn a_thread_the_os_places_is_pinned_where_it_gains() {
        // Place 2 is node 0 (the OS balances there); the thread got a
        // quarter of a CPU, an empty core promises all of one.
        let layout = Layout::uniform(1, 2);
        let mut crowd = Crowd::default();
        let occupants = [at(2, Some(0.25)), at(0, Some(1.0))];
        assert_eq!(
            crowd.moves(&layout, &CrowdConfig::default(), &node_areas(&layout), &occupants, 0.0),
            vec![1, 0]
        );
    }
}
