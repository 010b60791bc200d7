//! `bubbles+learn`'s NUMA level: whole bubbles move between nodes.
//!
//! ```text
//!   every learner period: each thread's speed and run share are summed
//!   (not those measured while Linux placed it)
//!
//!   at a NUMA tick (one that falls in Linux's window waits for the next
//!   learner period), unless the program was seen spinning:
//!     units: the outermost bubbles whose threads all lie in one node
//!     per unit: mean speed s and mean run share r over the NUMA period
//!     (1) a move made at an earlier tick is judged once s is measured:
//!         s ≥ the unit's speed before the move ─► kept
//!         else ─► the unit goes back, that node barred to it for BAR_TICKS
//!     (2) otherwise, units most crowded (lowest r) first; for every other
//!         node m not barred to the unit: its k threads fill m's cores one
//!         by one, each on the core promising most, 1 / (k_c + 1 + b_c)
//!         (k_c: the program's threads there, b_c: the others' weight
//!         crowd.rs last measured, 0 where nothing was) ─► predicted share p_m
//!           moves when  p_m ≥ r · (1 + margin) · cost
//!                       (cost 1 where memory follows, else the remote cost)
//!           and the program's CPU on both nodes, Σ k_c / (k_c + b_c), grows
//!         the first unit with such a node moves to the best one (one move
//!         per tick): its threads' places become that node, each on the
//!         core it filled, and (1) judges the move at the next tick
//! ```
//!
//! The papers' NUMA level (aspiration.rs) moves one thread at a time and
//! takes any node whose threads do better, or any empty node, as a better
//! reply. A bubble's threads share data, so they move together; and an
//! empty node is a better reply only where the others' load measured there
//! leaves room. The prediction only proposes: the measured speed decides,
//! so a move whose memory stayed behind and cost more than the CPU it
//! gained is undone at the next tick.

use std::collections::HashMap;

use super::{BubbleSet, Tracked, lowest_common};
use crate::aspiration::kept_on;
use crate::crowd::{Crowd, CrowdConfig, usable};
use crate::layout::Layout;
use crate::objective::sanitise_speed;
use crate::tree::PlaceTree;

/// NUMA ticks a node stays barred to a bubble whose move there was undone.
pub const BAR_TICKS: u64 = 5;

/// Loads closer than this are equal.
const EPS: f64 = 1e-9;

/// A thread's measurements since the last NUMA tick.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Sums {
    speed: f64,
    speeds: u32,
    share: f64,
    shares: u32,
}

impl Sums {
    /// Adds one period's speed and run share (either may be missing).
    pub(super) fn add(&mut self, speed: Option<f64>, share: Option<f64>) {
        if let Some(speed) = sanitise_speed(speed) {
            self.speed += speed;
            self.speeds += 1;
        }
        if let Some(share) = usable(share) {
            self.share += share;
            self.shares += 1;
        }
    }
}

/// A move waiting to be judged.
#[derive(Clone, Debug)]
struct Trial {
    unit: String,
    from: usize,
    to: usize,
    /// Its speed before the move, discounted as [`NumaLevel::kept`] says.
    before: f64,
}

/// The NUMA level's state.
#[derive(Clone, Debug, Default)]
pub(super) struct NumaLevel {
    ticks: u64,
    trial: Option<Trial>,
    /// (bubble, node, the tick until which it is barred).
    barred: Vec<(String, usize, u64)>,
    /// The node holding each bubble's memory: where it was first seen,
    /// or where it last moved when memory follows.
    homes: HashMap<String, usize>,
    /// Moves made, and of them, undone.
    pub(super) moves: u64,
    pub(super) undone: u64,
}

/// What a tick reads of the machine and the crowd.
pub(super) struct View<'a> {
    pub layout: &'a Layout,
    pub tree: &'a PlaceTree,
    pub crowd: &'a Crowd,
    pub cfg: &'a CrowdConfig,
    pub now_s: f64,
    /// How many times slower a thread runs away from its memory.
    pub remote_cost: f64,
    /// Memory binding moves a process's memory to the node holding most of
    /// its threads.
    pub memory_follows: bool,
}

/// A unit: an outermost bubble lying in one node, its node and threads.
struct Unit {
    bubble: usize,
    node: usize,
    members: Vec<usize>,
    speed: Option<f64>,
    share: Option<f64>,
    /// Its memory follows it: memory binding is on and it holds every
    /// thread of its processes.
    follows: bool,
}

impl NumaLevel {
    /// One NUMA tick over `threads` (in key order), whose sums it reads and
    /// clears; moves at most one bubble by setting its threads' places and
    /// cores.
    pub(super) fn tick(&mut self, view: &View<'_>, bubbles: &BubbleSet, threads: &mut [Tracked]) {
        self.ticks += 1;
        let units = units(view, bubbles, threads);
        for thread in threads.iter_mut() {
            thread.sums = Sums::default();
        }
        self.barred.retain(|&(_, _, until)| until > self.ticks);
        self.homes.retain(|name, _| bubbles.index(name).is_some());
        for unit in &units {
            let name = &bubbles.get(unit.bubble).name;
            if !self.homes.contains_key(name) {
                self.homes.insert(name.clone(), unit.node);
            }
        }
        let held = held_cores(view.layout, threads);

        if let Some(trial) = self.trial.take() {
            let unit = bubbles
                .index(&trial.unit)
                .and_then(|bubble| units.iter().find(|u| u.bubble == bubble && u.node == trial.to));
            match unit {
                // Not measured yet: wait.
                Some(unit) if unit.speed.is_none() => {
                    self.trial = Some(trial);
                    return;
                }
                Some(unit) => {
                    // Its speed where it is now, discounted where its memory
                    // stayed behind (the `useful` and `cpu` metrics do not
                    // see remote memory; heartbeats see it twice then, which
                    // only makes the judgement stricter).
                    let now = unit.speed.unwrap_or(0.0) * self.kept(view, &trial.unit, unit.follows, trial.to);
                    if now < trial.before {
                        let cores = fill(view, &held, &unit.members, threads, trial.from).cores;
                        place(view.layout, threads, &unit.members, trial.from, &cores);
                        if unit.follows {
                            self.homes.insert(trial.unit.clone(), trial.from);
                        }
                        self.barred.push((trial.unit, trial.to, self.ticks + BAR_TICKS));
                        self.undone += 1;
                    }
                    return;
                }
                // The bubble is gone, or the spread placed it elsewhere.
                None => {}
            }
        }

        let mut order: Vec<&Unit> = units
            .iter()
            .filter(|u| u.speed.is_some() && u.share.is_some())
            .collect();
        order.sort_by(|a, b| {
            a.share
                .unwrap_or(1.0)
                .total_cmp(&b.share.unwrap_or(1.0))
                .then(a.bubble.cmp(&b.bubble))
        });
        let margin = 1.0 + view.cfg.margin.max(0.0);
        for unit in order {
            let (Some(speed), Some(share)) = (unit.speed, unit.share) else {
                continue;
            };
            let name = &bubbles.get(unit.bubble).name;
            let local = |node: usize| self.kept(view, name, unit.follows, node);
            let mut best: Option<(usize, f64, Filled)> = None;
            for node in (0..view.layout.nodes()).filter(|&n| n != unit.node) {
                if self.barred.iter().any(|(b, n, _)| b == name && *n == node) {
                    continue;
                }
                let filled = fill(view, &held, &unit.members, threads, node);
                let promised = filled.share * local(node);
                let bar = best
                    .as_ref()
                    .map_or(share * local(unit.node) * margin, |&(_, best, _)| best);
                if promised >= bar && filled.program_gain > EPS {
                    best = Some((node, promised, filled));
                }
            }
            if let Some((node, _, filled)) = best {
                let before = speed * local(unit.node);
                place(view.layout, threads, &unit.members, node, &filled.cores);
                if unit.follows {
                    self.homes.insert(name.clone(), node);
                }
                self.trial = Some(Trial {
                    unit: name.clone(),
                    from: unit.node,
                    to: node,
                    before,
                });
                self.moves += 1;
                return;
            }
        }
    }
}

impl NumaLevel {
    /// The share of its speed a thread of bubble `name` keeps on `node`:
    /// all of it where the bubble's memory is or `follows` it, else one
    /// remote cost less.
    fn kept(&self, view: &View<'_>, name: &str, follows: bool, node: usize) -> f64 {
        match self.homes.get(name) {
            Some(&home) if !follows => kept_on(node, home, view.remote_cost),
            _ => 1.0,
        }
    }
}

/// The program's threads that take CPU (not those blocked, or declared
/// to weigh nothing) on every core place, by their cores.
fn held_cores(layout: &Layout, threads: &[Tracked]) -> Vec<usize> {
    let mut held = vec![0usize; layout.places().len()];
    for core in threads.iter().filter(|t| t.load() > 0.0).filter_map(|t| t.core) {
        if layout.is_core(core) {
            held[core] += 1;
        }
    }
    held
}

/// The units of the threads' bubbles, with their measurements.
fn units(view: &View<'_>, bubbles: &BubbleSet, threads: &[Tracked]) -> Vec<Unit> {
    let whole = view.layout.whole();
    // The smallest place holding every thread of each bubble, nested ones
    // included.
    let mut spans: Vec<Option<usize>> = vec![None; bubbles.len()];
    for thread in threads {
        let place = thread.place.unwrap_or(whole);
        let mut at = thread.bubble;
        while let Some(bubble) = at.filter(|&b| b < bubbles.len()) {
            spans[bubble] = Some(spans[bubble].map_or(place, |span| lowest_common(view.tree, span, place)));
            at = bubbles.get(bubble).parent;
        }
    }
    let node_of = |bubble: usize| spans[bubble].and_then(|place| view.layout.places()[place].node);
    let mut by_bubble: HashMap<usize, usize> = HashMap::new();
    let mut units: Vec<Unit> = Vec::new();
    for (index, thread) in threads.iter().enumerate() {
        // The outermost bubble around the thread that lies in one node.
        let mut unit = None;
        let mut at = thread.bubble;
        while let Some(bubble) = at.filter(|&b| b < bubbles.len() && node_of(b).is_some()) {
            unit = Some(bubble);
            at = bubbles.get(bubble).parent;
        }
        let Some(bubble) = unit else {
            continue;
        };
        let slot = *by_bubble.entry(bubble).or_insert_with(|| {
            units.push(Unit {
                bubble,
                node: node_of(bubble).expect("a unit lies in a node"),
                members: Vec::new(),
                speed: None,
                share: None,
                follows: false,
            });
            units.len() - 1
        });
        units[slot].members.push(index);
    }
    let mut threads_of: HashMap<u32, usize> = HashMap::new();
    for process in threads.iter().filter_map(|t| t.process) {
        *threads_of.entry(process).or_insert(0) += 1;
    }
    for unit in &mut units {
        let mut held: HashMap<u32, usize> = HashMap::new();
        let mut known = true;
        for &member in &unit.members {
            match threads[member].process {
                Some(process) => *held.entry(process).or_insert(0) += 1,
                None => known = false,
            }
        }
        unit.follows = view.memory_follows
            && known
            && held
                .iter()
                .all(|(process, count)| threads_of.get(process) == Some(count));
        let mean = |values: Vec<f64>| (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
        let sums: Vec<Sums> = unit.members.iter().map(|&i| threads[i].sums).collect();
        unit.speed = mean(
            sums.iter()
                .filter(|s| s.speeds > 0)
                .map(|s| s.speed / f64::from(s.speeds))
                .collect(),
        );
        unit.share = mean(
            sums.iter()
                .filter(|s| s.shares > 0)
                .map(|s| s.share / f64::from(s.shares))
                .collect(),
        );
    }
    units
}

/// A unit's threads filled onto a node's cores.
struct Filled {
    /// The core of each member, in order.
    cores: Vec<usize>,
    /// The mean share they are promised there.
    share: f64,
    /// The program's CPU on the two nodes after the move minus before.
    program_gain: f64,
}

/// Fills `members` onto `node`'s cores, each on the core promising it most.
fn fill(view: &View<'_>, held: &[usize], members: &[usize], threads: &[Tracked], node: usize) -> Filled {
    let layout = view.layout;
    let others = |core: usize, count: &[usize]| view.crowd.others_on(core, view.now_s, view.cfg, count[core] > 0);
    let program = |core: usize, count: &[usize]| {
        let k = count[core] as f64;
        if k > 0.0 { k / (k + others(core, held)) } else { 0.0 }
    };
    let mut count = held.to_vec();
    let mut touched: Vec<usize> = layout.cores_of(node).collect();
    for &member in members {
        if let Some(core) = threads[member].core.filter(|&c| layout.is_core(c)) {
            count[core] = count[core].saturating_sub(1);
            touched.push(core);
        }
    }
    touched.sort_unstable();
    touched.dedup();
    let before: f64 = touched.iter().map(|&core| program(core, held)).sum();
    let mut cores = Vec::with_capacity(members.len());
    let mut promised = 0.0;
    for _ in members {
        let best = layout
            .cores_of(node)
            .map(|core| (core, 1.0 / (count[core] as f64 + 1.0 + others(core, held))))
            .fold(None, |best: Option<(usize, f64)>, (core, p)| match best {
                Some((_, q)) if q >= p => best,
                _ => Some((core, p)),
            });
        let Some((core, p)) = best else {
            break;
        };
        count[core] += 1;
        promised += p;
        cores.push(core);
    }
    let after: f64 = touched.iter().map(|&core| program(core, &count)).sum();
    Filled {
        share: promised / members.len().max(1) as f64,
        program_gain: after - before,
        cores,
    }
}

/// Puts `members` on `node`, each on its core.
fn place(layout: &Layout, threads: &mut [Tracked], members: &[usize], node: usize, cores: &[usize]) {
    let node_place = layout.node_place(node);
    for (&member, &core) in members.iter().zip(cores) {
        threads[member].place = Some(node_place);
        threads[member].core = Some(core);
        threads[member].core_for = Some(node_place);
    }
}
