//! Bubble scheduling (paper 001): threads that belong together are grouped
//! in nested bubbles, and the bubbles are spread over the place tree.
//!
//! ```text
//!   BubbleSpec[] (rules file, in-process API) ─► BubbleSet::new (names,
//!        nesting checked; parents before children)
//!
//!   once per period, BubblesPolicy::decide(PeriodInput):
//!     threads + input.bubbles (the set as it stands and each thread's
//!     bubble, from the engine)
//!        │ reconcile: new / ended threads, bubble changes, a new set ─► respread now
//!        │       (a young thread joining a bubble: the bubble's young
//!        │       threads are placed afresh, SETTLING_PERIODS)
//!        │ load: the one the program declared for the thread, if any
//!        │       (a change respreads now), else 1 while the thread runs,
//!        │       0 after QUIET_PERIODS periods without a speed (blocked:
//!        │       it stays high in the tree)
//!        │       load changed and REGENERATE periods since the last spread
//!        │                                                  ─► respread (regeneration)
//!        ▼
//!     spread(tree, bubbles, members, remote_cost) ─► a place per thread (spread.rs)
//!        │
//!     guard.next(progress) ─► Os: every thread on the whole machine (the
//!                                 window's first period: back on Linux's cores)
//!                             Learn: the spread's places
//! ```
//!
//! `bubbles+learn` ([`BubblesPolicy::with_learning`]) goes one step further
//! in the learner's periods: each thread gets an area, the place holding its
//! bubble (or its node, see [`areas`]), and inside it the thread holds one
//! core, first the area's least crowded, then moved by crowd moves (crowd.rs: where the run shares
//! all threads measured promise a gain, so the other programs' load the
//! spread cannot see is avoided); programs seen spinning keep their first
//! cores (run shares do not tell crowding apart then).
//!
//! ```text
//!   spread places ─► areas ─► each thread: its core if still inside its area
//!                            and the spread kept its place, else the
//!                            spread's core, or the area's core with fewest threads
//!                         ─► Crowd::moves(areas, run shares) ─► a core per thread
//! ```
//!
//! The guard is the learner's do-no-harm guard (guard.rs): here its
//! `Learn` arm is the bubbles' placement, and it is champion first whatever
//! the guard's `first` says. Bubbles are placed when their threads start, as
//! in the paper: a thread's memory is first touched where its bubble is, and
//! a later move would leave it behind (in the simulator, heat on four nodes
//! ran 2.8x longer when Linux's windows came first: the first touches
//! happened on Linux's nodes and the bubbles then pulled the threads away
//! from their memory). Linux's windows are the probes. Where remote memory
//! costs nothing (`remote_cost` 1) that reason is gone, and the guard's
//! `first` holds (Linux first by default): in the simulator at NUMA factor
//! 1, heat with half of every node's cores loaded went from 4.0% to 2.4%
//! over Linux, fib with 16 leaves from 8.0% to 0.2%.
//!
//! `bubbles+learn`'s NUMA level (numa.rs) moves whole bubbles between
//! nodes once per NUMA period.

mod numa;
mod spread;

pub use numa::BAR_TICKS;
pub use spread::{Member, spread};

use crate::crowd::{Crowd, CrowdConfig, Naps, Occupant, wake_weight};
use crate::guard::{Arm, Guard, GuardConfig, GuardStats, HandBack};
use crate::layout::{Layout, PlaceKind};
use crate::objective::sanitise_speed;
use crate::tree::PlaceTree;
use crate::{BubbleInput, Decision, PeriodInput, Policy, ThreadKey};
use std::collections::HashMap;

/// Periods without a measured speed after which a thread counts as blocked
/// (load 0): 0.5 s at the default period. Fewer would misread the sampled
/// `useful` metric, which measures a thread switched to very often only one
/// period in eight (seen live: workers of a busy machine read as blocked,
/// and their bubbles moved).
pub const QUIET_PERIODS: u32 = 10;

/// Periods in which a new thread is young (0.25 s at the default period).
/// A thread runs for a moment before it joins its bubble (the preload's
/// thread tree: it joins its creator's bubble as it starts; rules on
/// names: a name the thread sets itself), so a period may see it in no
/// bubble, or its creator alone in the bubble, and place them apart; a
/// respread that kept those places would split the bubble for good (seen
/// live: two families of a creator and two leaves on two one-core nodes,
/// split in 5 runs of 40 beside two busy loops). When a young thread joins
/// a bubble, the bubble's young threads, which have touched little memory
/// yet, are placed afresh, together, as if just started. Threads that start
/// in their bubble (declared before they run) are not moved for it.
pub const SETTLING_PERIODS: u32 = 5;

/// Fewest periods between two regenerations caused by loads changing (the
/// paper warns of ping-pong); threads appearing, ending or changing bubble
/// are placed at once.
pub const REGENERATE_PERIODS: u64 = 5;

/// How many times slower a thread is assumed to run away from its memory
/// when neither the settings nor the machine's NUMA distances say
/// (`remote_cost`, see [`spread`]): a respread moves a thread to another
/// node only from a node with at least this many threads per CPU. Memory-
/// bound threads on two-socket machines run about 1.5-2x slower on remote
/// memory (their firmware's distances say 2.1), compute-bound ones barely.
pub const DEFAULT_REMOTE_COST: f64 = 2.0;

/// A bubble as declared, its parent named.
#[derive(Clone, Debug, PartialEq)]
pub struct BubbleSpec {
    pub name: String,
    /// The bubble it is nested in; `None`: the root.
    pub parent: Option<String>,
    /// Higher is placed first.
    pub priority: i32,
    /// The level at which it opens; `None`: wherever the spread needs.
    pub burst: Option<PlaceKind>,
    /// Its load instead of the sum of its threads'.
    pub load: Option<f64>,
}

impl BubbleSpec {
    pub fn new(name: impl Into<String>) -> Self {
        BubbleSpec {
            name: name.into(),
            parent: None,
            priority: 0,
            burst: None,
            load: None,
        }
    }

    pub fn within(mut self, parent: impl Into<String>) -> Self {
        self.parent = Some(parent.into());
        self
    }
}

/// A checked bubble: its parent by index.
#[derive(Clone, Debug, PartialEq)]
pub struct Bubble {
    pub name: String,
    pub parent: Option<usize>,
    pub priority: i32,
    pub burst: Option<PlaceKind>,
    pub load: Option<f64>,
}

/// Why a set of bubbles cannot be used; one line each.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BubbleError {
    #[error("a bubble has an empty name: give every bubble a name")]
    EmptyName,
    #[error("bubble {0:?} is declared twice: give each bubble its own name")]
    Twice(String),
    #[error("bubble {bubble:?} is nested in {parent:?}, which is not declared")]
    UnknownParent { bubble: String, parent: String },
    #[error("bubble {0:?} is nested in itself (through {1}): a bubble cannot hold its own ancestors")]
    Cycle(String, String),
    #[error("bubble {0:?}: load {1} is not a number of at least 0")]
    BadLoad(String, String),
}

/// Bubbles with checked names and nesting, parents before children.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BubbleSet {
    bubbles: Vec<Bubble>,
}

impl BubbleSet {
    /// Checks `specs` and orders them so that every parent comes before its
    /// children (otherwise keeping the given order).
    pub fn new(specs: Vec<BubbleSpec>) -> Result<Self, BubbleError> {
        let mut by_name: HashMap<&str, usize> = HashMap::new();
        for (index, spec) in specs.iter().enumerate() {
            if spec.name.trim().is_empty() {
                return Err(BubbleError::EmptyName);
            }
            if by_name.insert(spec.name.as_str(), index).is_some() {
                return Err(BubbleError::Twice(spec.name.clone()));
            }
            if let Some(load) = spec.load
                && !(load.is_finite() && load >= 0.0)
            {
                return Err(BubbleError::BadLoad(spec.name.clone(), load.to_string()));
            }
        }
        let mut parent_of = Vec::with_capacity(specs.len());
        for spec in &specs {
            let parent = match &spec.parent {
                None => None,
                Some(parent) => Some(*by_name.get(parent.as_str()).ok_or_else(|| BubbleError::UnknownParent {
                    bubble: spec.name.clone(),
                    parent: parent.clone(),
                })?),
            };
            parent_of.push(parent);
        }
        // Depth of each bubble; a chain longer than the set is a cycle.
        let mut order: Vec<(usize, usize)> = Vec::with_capacity(specs.len());
        for index in 0..specs.len() {
            let mut depth = 0;
            let mut chain = vec![format!("{:?}", specs[index].name)];
            let mut at = parent_of[index];
            while let Some(parent) = at {
                depth += 1;
                chain.push(format!("{:?}", specs[parent].name));
                if parent == index || depth > specs.len() {
                    return Err(BubbleError::Cycle(specs[index].name.clone(), chain.join(" in ")));
                }
                at = parent_of[parent];
            }
            order.push((depth, index));
        }
        order.sort_unstable();
        let mut new_index = vec![0; specs.len()];
        for (position, &(_, index)) in order.iter().enumerate() {
            new_index[index] = position;
        }
        let bubbles = order
            .iter()
            .map(|&(_, index)| {
                let spec = &specs[index];
                Bubble {
                    name: spec.name.clone(),
                    parent: parent_of[index].map(|p| new_index[p]),
                    priority: spec.priority,
                    burst: spec.burst,
                    load: spec.load,
                }
            })
            .collect();
        Ok(BubbleSet { bubbles })
    }

    pub fn len(&self) -> usize {
        self.bubbles.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bubbles.is_empty()
    }

    /// # Panics
    /// If `index` is not below [`Self::len`].
    pub fn get(&self, index: usize) -> &Bubble {
        &self.bubbles[index]
    }

    pub fn iter(&self) -> impl Iterator<Item = &Bubble> {
        self.bubbles.iter()
    }

    /// Adds a bubble nested in one already in the set (bubbles a program
    /// creates while it runs); returns its index.
    pub fn add(&mut self, spec: BubbleSpec) -> Result<usize, BubbleError> {
        if spec.name.trim().is_empty() {
            return Err(BubbleError::EmptyName);
        }
        if self.index(&spec.name).is_some() {
            return Err(BubbleError::Twice(spec.name));
        }
        if let Some(load) = spec.load
            && !(load.is_finite() && load >= 0.0)
        {
            return Err(BubbleError::BadLoad(spec.name, load.to_string()));
        }
        let parent = match &spec.parent {
            None => None,
            Some(parent) => Some(self.index(parent).ok_or_else(|| BubbleError::UnknownParent {
                bubble: spec.name.clone(),
                parent: parent.clone(),
            })?),
        };
        self.bubbles.push(Bubble {
            name: spec.name,
            parent,
            priority: spec.priority,
            burst: spec.burst,
            load: spec.load,
        });
        Ok(self.bubbles.len() - 1)
    }

    /// The index of the bubble called `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.bubbles.iter().position(|b| b.name == name)
    }

    /// The burst levels used that `tree` lacks (a bubble would never open).
    pub fn missing_levels(&self, tree: &PlaceTree) -> Vec<(String, PlaceKind)> {
        self.bubbles
            .iter()
            .filter_map(|b| {
                b.burst
                    .filter(|&kind| !tree.has_level(kind))
                    .map(|kind| (b.name.clone(), kind))
            })
            .collect()
    }
}

/// A live thread as the policy tracks it.
#[derive(Clone, Debug)]
struct Tracked {
    key: ThreadKey,
    bubble: Option<usize>,
    /// Periods it has been tracked, up to [`SETTLING_PERIODS`].
    age: u32,
    /// Periods in a row without a measured speed.
    quiet: u32,
    /// The load its program declared (`None`: measured).
    declared: Option<f64>,
    /// Its load at the last spread.
    spread_load: f64,
    /// Its place from the last spread (`None`: not spread yet).
    place: Option<usize>,
    /// `bubbles+learn`: the core it holds inside its area, and whether it
    /// was given that core this period (its share was measured elsewhere).
    core: Option<usize>,
    moved: bool,
    /// The place `core` was chosen inside: a respread that gives the
    /// thread another place chooses its core again.
    core_for: Option<usize>,
    /// `bubbles+learn`: what it measured since the last NUMA tick.
    sums: numa::Sums,
    /// `bubbles+learn`: the periods it was hardly runnable (a sleeper holds
    /// no core).
    naps: Naps,
    /// Its process, where the engine says.
    process: Option<u32>,
}

impl Tracked {
    fn load(&self) -> f64 {
        match self.declared {
            Some(load) => load,
            None if self.quiet >= QUIET_PERIODS => 0.0,
            None => 1.0,
        }
    }
}

/// `--policy bubbles`: the spread placement of the bubbles the engine
/// passes in, regenerated when threads come and go, bubbles appear, or loads
/// change, under the do-no-harm guard.
#[derive(Clone, Debug)]
pub struct BubblesPolicy {
    layout: Layout,
    tree: PlaceTree,
    /// The set of the last spread.
    bubbles: BubbleSet,
    guard: Guard,
    /// The guard's settings as given (its `first` is overridden).
    guard_config: GuardConfig,
    /// Linux's placement, put back when its windows start.
    hand_back: HandBack,
    threads: Vec<Tracked>,
    last_spread: Option<u64>,
    regenerations: u64,
    /// The input's shake count at the last period, and whether the next
    /// spread ignores where threads are.
    shakes: u64,
    shaken: bool,
    /// `bubbles+learn`: the cores inside each thread's place.
    learning: Option<Learning>,
    /// How many times slower a thread runs away from its memory (assumed).
    remote_cost: f64,
}

/// `bubbles+learn`'s state: crowd moves inside the spread's places.
#[derive(Clone, Debug)]
struct Learning {
    cfg: CrowdConfig,
    crowd: Crowd,
    /// For every place, the cores inside it (a core: itself).
    cores_in: Vec<Vec<usize>>,
    /// The share of waiting that marks a program as spinning (the guard's
    /// `blind_waiting`), and whether it was seen.
    blind_waiting: f64,
    spinning: bool,
    /// The last period was Linux's: the shares measured there are not of
    /// the threads' cores.
    after_os: bool,
    /// The NUMA level (numa.rs). A tick that falls in Linux's window is
    /// skipped, as the learner's (learn.rs): taking it at the next period
    /// instead changed no cell of the heat and fib simulations by more
    /// than 1.1% (2026-11-25, docs/bubbles.md).
    numa: numa::NumaLevel,
    /// Memory binding moves a process's memory where most of its threads
    /// are: a bubble holding whole processes takes their memory along.
    memory_follows: bool,
}

impl BubblesPolicy {
    pub fn new(layout: Layout, tree: PlaceTree, guard: GuardConfig) -> Self {
        let given = guard;
        let guard = GuardConfig {
            first: Arm::Learn,
            ..guard
        };
        BubblesPolicy {
            layout,
            tree,
            bubbles: BubbleSet::default(),
            guard: Guard::new(guard),
            guard_config: given,
            hand_back: HandBack::default(),
            threads: Vec::new(),
            last_spread: None,
            regenerations: 0,
            shakes: 0,
            shaken: false,
            learning: None,
            remote_cost: DEFAULT_REMOTE_COST,
        }
    }

    /// The same policy assuming a thread runs `cost` times slower away from
    /// its memory (at least 1; see [`spread`]). Where remote memory costs
    /// nothing (1), where the bubbles are placed first does not matter for
    /// memory, and the guard starts with the arm its settings say (Linux by
    /// default) as for the learner.
    pub fn assuming_remote_cost(mut self, cost: f64) -> Self {
        self.remote_cost = if cost.is_nan() {
            DEFAULT_REMOTE_COST
        } else {
            cost.max(1.0)
        };
        if self.remote_cost <= 1.0 {
            self.guard = Guard::new(self.guard_config);
        }
        self
    }

    /// `bubbles+learn`: as [`BubblesPolicy::new`], and inside the place the
    /// spread gives a thread, the thread holds one core chosen by crowd
    /// moves (see the module doc).
    pub fn with_learning(layout: Layout, tree: PlaceTree, guard: GuardConfig, crowd: CrowdConfig) -> Self {
        let cores: Vec<usize> = layout.all_cores().collect();
        let cores_in = (0..layout.places().len())
            .map(|place| {
                cores
                    .iter()
                    .copied()
                    .filter(|&core| tree.is_within(core, place))
                    .collect()
            })
            .collect();
        let blind_waiting = guard.blind_waiting;
        let mut policy = BubblesPolicy::new(layout, tree, guard);
        policy.learning = Some(Learning {
            cfg: crowd,
            crowd: Crowd::default(),
            cores_in,
            blind_waiting,
            spinning: false,
            after_os: false,
            numa: numa::NumaLevel::default(),
            memory_follows: false,
        });
        policy
    }

    /// `bubbles+learn`: whether memory binding moves a process's memory to
    /// the node holding most of its threads, so that a bubble holding every
    /// thread of its processes takes their memory along to another node.
    /// Other bubbles leave theirs behind: the NUMA level moves them only
    /// where they are promised `remote_cost` times the CPU they have.
    pub fn with_memory_following(mut self, follows: bool) -> Self {
        if let Some(learning) = self.learning.as_mut() {
            learning.memory_follows = follows;
        }
        self
    }

    /// `bubbles+learn`: whole bubbles moved between nodes by the NUMA level,
    /// and how many of those moves were undone (the bubble ran slower).
    pub fn bubble_moves(&self) -> (u64, u64) {
        self.learning
            .as_ref()
            .map_or((0, 0), |learning| (learning.numa.moves, learning.numa.undone))
    }

    /// Spreads done because loads changed (not counting those for threads
    /// coming, going or changing bubble).
    pub fn regenerations(&self) -> u64 {
        self.regenerations
    }

    /// The bubbles of the last spread.
    pub fn bubbles(&self) -> &BubbleSet {
        &self.bubbles
    }

    /// Brings the tracked threads and the set in line with `input`; true
    /// when a thread appeared, ended or changed bubble, or the set changed.
    fn reconcile(&mut self, input: &PeriodInput<'_>) -> bool {
        let empty = BubbleSet::default();
        let BubbleInput {
            set,
            of,
            loads,
            shakes,
            processes,
        } = input.bubbles.unwrap_or(BubbleInput {
            set: &empty,
            of: &[],
            loads: &[],
            shakes: self.shakes,
            processes: &[],
        });
        let mut changed = false;
        if shakes != self.shakes {
            self.shakes = shakes;
            self.shaken = true;
            changed = true;
        }
        if *set != self.bubbles {
            self.bubbles = set.clone();
            changed = true;
        }
        let count = self.bubbles.len();
        let bubble_of = |i: usize| of.get(i).copied().flatten().filter(|&b| b < count);
        let mut previous = std::mem::take(&mut self.threads).into_iter().peekable();
        // Bubbles a young thread joined since the last period.
        let mut rejoined: Vec<usize> = Vec::new();
        for (i, sample) in input.threads.iter().enumerate() {
            while previous.next_if(|t| t.key < sample.key).is_some() {
                changed = true;
            }
            let bubble = bubble_of(i);
            let declared = loads
                .get(i)
                .copied()
                .flatten()
                .filter(|load| load.is_finite() && *load >= 0.0);
            let measured = sanitise_speed(sample.speed).is_some();
            let process = processes.get(i).copied();
            let tracked = match previous.next_if(|t| t.key == sample.key) {
                Some(mut tracked) => {
                    changed |= tracked.bubble != bubble || tracked.declared != declared;
                    if tracked.bubble != bubble
                        && tracked.age < SETTLING_PERIODS
                        && let Some(joined) = bubble
                    {
                        rejoined.push(joined);
                    }
                    tracked.age = tracked.age.saturating_add(1).min(SETTLING_PERIODS);
                    tracked.bubble = bubble;
                    tracked.declared = declared;
                    tracked.quiet = if measured { 0 } else { tracked.quiet.saturating_add(1) };
                    tracked.naps.record(sample.share.is_none());
                    tracked.process = process;
                    tracked
                }
                None => {
                    changed = true;
                    Tracked {
                        key: sample.key,
                        bubble,
                        age: 0,
                        quiet: 0,
                        declared,
                        spread_load: 1.0,
                        place: None,
                        core: None,
                        moved: false,
                        core_for: None,
                        sums: numa::Sums::default(),
                        naps: Naps::default(),
                        process,
                    }
                }
            };
            self.threads.push(tracked);
        }
        // Their young threads are placed afresh, together (SETTLING_PERIODS).
        for thread in &mut self.threads {
            if thread.age < SETTLING_PERIODS && thread.bubble.is_some_and(|b| rejoined.contains(&b)) {
                thread.place = None;
            }
        }
        changed | previous.next().is_some()
    }

    fn respread(&mut self) {
        let shaken = std::mem::replace(&mut self.shaken, false);
        let members: Vec<Member> = self
            .threads
            .iter()
            .map(|t| Member {
                bubble: t.bubble,
                load: t.load(),
                priority: 0,
                previous: if shaken { None } else { t.place },
            })
            .collect();
        let places = spread(&self.tree, &self.bubbles, &members, self.remote_cost);
        for (thread, (place, member)) in self.threads.iter_mut().zip(places.into_iter().zip(&members)) {
            thread.place = Some(place);
            thread.spread_load = member.load;
        }
    }
}

/// `bubbles+learn`: the place each thread may choose its core in. A
/// thread's bubble holds its threads in the smallest place containing the
/// places the spread gave them; that place is the area when it lies inside
/// one node and has two cores or more. Otherwise (no bubble, a bubble of
/// one thread, or one split over nodes) the area is the node of the
/// thread's place: moving between nodes leaves memory behind. A thread the
/// spread left above the nodes keeps that place as its area.
fn areas(tree: &PlaceTree, cores_in: &[Vec<usize>], threads: &[Tracked], whole: usize) -> Vec<usize> {
    let mut held: HashMap<usize, usize> = HashMap::new();
    for thread in threads {
        if let Some(bubble) = thread.bubble {
            let place = thread.place.unwrap_or(whole);
            held.entry(bubble)
                .and_modify(|lca| *lca = lowest_common(tree, *lca, place))
                .or_insert(place);
        }
    }
    threads
        .iter()
        .map(|thread| {
            let place = thread.place.unwrap_or(whole);
            let mut node = Some(place);
            while let Some(at) = node.filter(|&at| tree.kind(at) != PlaceKind::Node) {
                node = tree.parent(at);
            }
            let Some(node) = node else {
                return place;
            };
            match thread.bubble.and_then(|bubble| held.get(&bubble)) {
                Some(&lca) if tree.is_within(lca, node) && cores_in[lca].len() >= 2 => lca,
                _ => node,
            }
        })
        .collect()
}

/// The smallest place of `tree` holding both `a` and `b`.
fn lowest_common(tree: &PlaceTree, a: usize, b: usize) -> usize {
    let mut at = Some(a);
    while let Some(place) = at {
        if tree.is_within(b, place) {
            return place;
        }
        at = tree.parent(place);
    }
    tree.root()
}

impl BubblesPolicy {
    /// `bubbles+learn`, in a learner's period: every thread's core inside
    /// its area (module doc, [`areas`]).
    fn cores_inside(&mut self, input: &PeriodInput<'_>) -> Vec<usize> {
        let whole = self.layout.whole();
        let Some(learning) = self.learning.as_mut() else {
            return self.threads.iter().map(|t| t.place.unwrap_or(whole)).collect();
        };
        if input.waiting.is_some_and(|w| w >= learning.blind_waiting) {
            learning.spinning = true;
        }
        let areas_of = areas(&self.tree, &learning.cores_in, &self.threads, whole);
        // Threads per core, of those already inside their area.
        let mut count = vec![0usize; self.layout.places().len()];
        for (thread, &area) in self.threads.iter_mut().zip(&areas_of) {
            let area = &learning.cores_in[area];
            thread.moved = false;
            match thread.core {
                Some(core) if area.contains(&core) && thread.core_for == thread.place => count[core] += 1,
                _ => thread.core = None,
            }
        }
        for (thread, &area) in self.threads.iter_mut().zip(&areas_of) {
            if thread.core.is_none() {
                let area = &learning.cores_in[area];
                // The spread's core when it gave one, else the area's least
                // crowded core.
                let spread_core = thread
                    .place
                    .filter(|&place| self.layout.is_core(place) && area.contains(&place));
                let core = spread_core.or_else(|| area.iter().copied().min_by_key(|&core| (count[core], core)));
                if let Some(core) = core {
                    count[core] += 1;
                    thread.moved = true;
                }
                thread.core = core;
                thread.core_for = thread.place;
            }
        }
        if !learning.after_os {
            for (thread, sample) in self.threads.iter_mut().zip(input.threads) {
                thread.sums.add(sample.speed, sample.share);
            }
        }
        if !learning.spinning {
            // An occupant's area is a place: its cores are `cores_in[place]`.
            let occupants: Vec<Occupant> = self
                .threads
                .iter()
                .zip(input.threads)
                .zip(&areas_of)
                .map(|((thread, sample), &area)| Occupant {
                    place: thread.core.unwrap_or(area),
                    // A thread given a new core just now measured its share elsewhere.
                    share: sample.share.filter(|_| !thread.moved && !learning.after_os),
                    area,
                    asleep: thread.naps.asleep(),
                    wakes: wake_weight(sample.grain_s, input.wake_slice_s),
                })
                .collect();
            let moved = learning.crowd.moves(
                &self.layout,
                &learning.cfg,
                &learning.cores_in,
                &occupants,
                input.time_s,
            );
            for (thread, core) in self.threads.iter_mut().zip(moved) {
                if thread.core.is_some() {
                    thread.core = Some(core);
                }
            }
        }
        learning.after_os = false;
        if input.numa_tick && !learning.spinning && self.layout.nodes() > 1 {
            let view = numa::View {
                layout: &self.layout,
                tree: &self.tree,
                crowd: &learning.crowd,
                cfg: &learning.cfg,
                now_s: input.time_s,
                remote_cost: self.remote_cost,
                memory_follows: learning.memory_follows,
            };
            learning.numa.tick(&view, &self.bubbles, &mut self.threads);
        }
        self.threads
            .iter()
            .map(|t| t.core.or(t.place).unwrap_or(whole))
            .collect()
    }
}

impl Policy for BubblesPolicy {
    fn name(&self) -> String {
        if self.learning.is_some() {
            "bubbles+learn".to_string()
        } else {
            "bubbles".to_string()
        }
    }

    fn guard_stats(&self) -> Option<GuardStats> {
        self.guard_config.enabled.then(|| self.guard.stats())
    }

    fn guard_arm(&self) -> Option<Arm> {
        self.guard_config.enabled.then(|| self.guard.arm())
    }

    fn wants_cores(&self) -> bool {
        self.guard.os_window_ending()
    }

    fn decide(&mut self, input: &PeriodInput<'_>) -> Decision {
        let changed = self.reconcile(input);
        let loads_changed = self.threads.iter().any(|t| t.load() != t.spread_load);
        let due = self
            .last_spread
            .is_none_or(|last| input.period >= last + REGENERATE_PERIODS);
        if changed || (loads_changed && due) {
            if !changed {
                self.regenerations += 1;
            }
            self.respread();
            self.last_spread = Some(input.period);
            // A new spread: the guard's next probe is a new placement.
            self.guard.learner_changed();
        }
        let utility: Vec<f64> = input
            .threads
            .iter()
            .map(|t| sanitise_speed(t.speed).unwrap_or(f64::NAN))
            .collect();
        let arm = self
            .guard
            .next(input.progress_or_speed_sum(), crate::guard::Signs::of(input));
        let whole = self.layout.whole();
        let linux_placement = self.guard.ended_linux_s_own_window();
        let place = match self.hand_back.places(input, arm, whole, linux_placement) {
            Some(linux) => {
                if let Some(learning) = self.learning.as_mut() {
                    learning.after_os = true;
                }
                linux
            }
            None => {
                let place = self.cores_inside(input);
                self.guard.placed(input.threads, &place);
                place
            }
        };
        Decision { place, utility }
    }
}
