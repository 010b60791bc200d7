//! Scheduling policies as pure, seeded state machines.
//!
//! ```text
//!   engine (real process or simulator), once per core period T_CPU:
//!
//!   ThreadSample[] ──► Policy::decide(PeriodInput) ──► Decision { place[i], utility[i] }
//!   (stable order,        │                                  │
//!    speed per thread)    │ learn: objective f(speeds)       └─► engine pins thread i to
//!                         │        PLA per thread (cores)         layout.places[place[i]]
//!                         │        aspiration per thread (nodes) when numa_tick
//!                         │ static: round-robin once
//!                         │ os: the wide place, never pin
//!                         │ bubbles: spread the declared bubbles over the place tree
//! ```
//!
//! Nothing here makes a syscall or reads a clock: every input arrives in
//! [`PeriodInput`], and all randomness comes from a ChaCha RNG seeded by the
//! caller, so a run is reproducible bit for bit and the same code drives a
//! real process and the simulated machine.

mod aspiration;
mod bubbles;
mod config;
mod crowd;
mod guard;
mod layout;
mod learn;
mod objective;
mod pla;
mod simple;
mod tree;

pub use aspiration::{
    Aspiration, AspirationConfig, AspirationLevels, BenchmarkUpdate, Migration, MoveReason, NumaState, better_replies,
    better_replies_near, move_intent,
};
pub use bubbles::{
    BAR_TICKS, Bubble, BubbleError, BubbleSet, BubbleSpec, BubblesPolicy, DEFAULT_REMOTE_COST, Member, QUIET_PERIODS,
    REGENERATE_PERIODS, SETTLING_PERIODS, spread,
};
pub use config::{ConfigError, ConfigProblem, LearnConfig, Moves, Start};
pub use crowd::{Crowd, CrowdConfig, Occupant, WAKE_SHARE, node_areas, wake_weight};
pub use guard::{Arm, ForecastAges, Guard, GuardConfig, GuardStats, HandBack, Signs};
pub use layout::{Layout, PlaceKind, PlaceSpec};
pub use learn::LearnPolicy;
pub use objective::{Objective, ParseObjectiveError};
pub use pla::{Pla, PlaConfig};
pub use simple::{OsPolicy, StaticPolicy};
pub use tree::PlaceTree;

/// Identifies a thread for its whole life (a kernel TID for real processes,
/// an index in the simulator). Keys are never reused within one run.
pub type ThreadKey = u64;

/// What was measured of one live thread over the period that just ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThreadSample {
    pub key: ThreadKey,
    /// Speed over the period, larger is better, in the metric's unit
    /// (share of a nominal core for `cpu`, 1e9 instructions/s for
    /// `instructions`, normalised beats for `heartbeat`). `None` when there is
    /// nothing to learn from: the thread is new, or was not runnable at all.
    pub speed: Option<f64>,
    /// The share of its runnable time the thread spent running over the
    /// period (1: it never waited for a CPU), whatever the metric; how
    /// crowded its place is. `None` where the target cannot tell or the
    /// thread was hardly runnable.
    pub share: Option<f64>,
    /// How long the thread ran between two sleeps of its own over its
    /// recent periods (its run time over its voluntary context switches: a
    /// thread that waits at barriers or for a queue sleeps once a round);
    /// `None` where it did not sleep or the target cannot tell. With
    /// [`PeriodInput::wake_slice_s`] it tells how much of a core shared
    /// with another scheduling group the thread takes at its wake-ups.
    pub grain_s: Option<f64>,
    /// CPU-seconds per second the thread ran working code over the period
    /// (all of its run time where the target does not tell waiting code
    /// from work): a thread that meets its siblings at barriers works a
    /// round per round whatever its run share, one that pools its work
    /// with them works as much as its share lets it ([`crate::crowd::Pooling`]).
    /// `None` where the target cannot tell.
    pub worked: Option<f64>,
}

/// Everything a policy gets for one core-level period.
#[derive(Clone, Copy, Debug)]
pub struct PeriodInput<'a> {
    /// Period number, 0 for the first call.
    pub period: u64,
    /// Seconds since the manager started (real or simulated).
    pub time_s: f64,
    /// Every live thread, sorted by key. Threads absent from the previous call
    /// are new; threads present before and absent now have ended.
    pub threads: &'a [ThreadSample],
    /// True when a NUMA-level period (T_NUMA) also ends with this period.
    pub numa_tick: bool,
    /// The application's total progress rate over the period, in a unit
    /// fixed for the whole run (heartbeats/s, instructions/s, CPUs' worth of
    /// run time), when the target measures one; the learner's guard compares
    /// it between its windows and falls back on the sum of the speeds.
    pub progress: Option<f64>,
    /// The share of the threads' CPU time spent in waiting code over the
    /// period (spinning at barriers, in locks), when the target can tell
    /// (CPU-clock samples); the guard probes the learner early where Linux
    /// leaves much of it.
    pub waiting: Option<f64>,
    /// The share of the threads' runnable time spent queued for a CPU while
    /// the program ran on fewer CPUs than it may use (other programs had the
    /// rest), 0 when it had them all; `None` when the target cannot tell.
    /// The guard probes the learner early where Linux leaves much of it.
    pub queued: Option<f64>,
    /// The share of the program's CPUs' time that other programs ran on
    /// them (0: the program had its CPUs to itself), over the period or,
    /// where the target counts it coarsely, its last second (live: clock
    /// ticks of /proc/stat); `None` when the target cannot tell.
    pub others: Option<f64>,
    /// The share of the threads' memory that lay on another NUMA node than
    /// the one each ran on, over the period, weighted by run time (live:
    /// of the pages each thread first touched, sampled; the simulator: of
    /// its accesses); `None` where the target cannot tell (one memory node,
    /// no page-fault samples). Run time does not show the stalls this
    /// costs: the guard gives ties to the arm that keeps it lower.
    pub remote: Option<f64>,
    /// Indexed by place (`Layout::places`; `None` at the node and whole
    /// places): for each core, the share of its time that other programs
    /// ran on it, over the same span as [`PeriodInput::others`]; `None`
    /// where the target cannot tell.
    pub others_by_core: Option<&'a [Option<f64>]>,
    /// Linux's scheduler slice, where the other programs running on the
    /// machine are in scheduling groups apart from the target's (another
    /// session under autogroup, another CPU cgroup); `None` where they share
    /// its group or the target cannot tell. Linux then shares a loaded core
    /// between the groups, and each thread that wakes preempts the other
    /// group for about a slice: two or more threads that sleep between
    /// rounds shorter than a slice take most of such a core (the crowd's
    /// wake-up share, `crowd.rs`).
    pub wake_slice_s: Option<f64>,
    /// Aligned with `threads`: the core place (index into
    /// `Layout::places`) each thread ran on last, in the periods after the
    /// policy said [`Policy::wants_cores`] and where the target knows it.
    pub cores: Option<&'a [Option<usize>]>,
    /// The declared bubbles and each thread's bubble, when the engine has
    /// any (`--bubbles`, a program's own declarations). Only the bubbles
    /// policy reads it.
    pub bubbles: Option<BubbleInput<'a>>,
}

/// The bubbles as they stand this period: the set (which may grow while a
/// program runs) and the bubble of every thread.
#[derive(Clone, Copy, Debug)]
pub struct BubbleInput<'a> {
    pub set: &'a BubbleSet,
    /// Aligned with [`PeriodInput::threads`]: an index into `set`, or `None`
    /// for the root.
    pub of: &'a [Option<usize>],
    /// Aligned with [`PeriodInput::threads`] (or empty: none declared): the
    /// load a program declared for a thread (0 for a thread that only waits,
    /// as a parent joining its children), used instead of the measured one.
    pub loads: &'a [Option<f64>],
    /// Shakes asked for so far (a program's `shake`): a new count means
    /// spread everything afresh, ignoring where threads are.
    pub shakes: u64,
    /// Aligned with [`PeriodInput::threads`] (or empty: unknown): the
    /// process of each thread. A bubble holding every thread of its
    /// processes takes their memory along when memory binding moves it.
    pub processes: &'a [u32],
}

impl ThreadSample {
    /// Thread `key` measured at `speed`, nothing else known of it (its
    /// share of its runnable time, its run time between sleeps).
    pub const fn of(key: ThreadKey, speed: Option<f64>) -> Self {
        ThreadSample {
            key,
            speed,
            share: None,
            grain_s: None,
            worked: None,
        }
    }
}

impl<'a> PeriodInput<'a> {
    /// Period `period` at `time_s` with only the threads' samples: no NUMA
    /// tick, and nothing else measured or declared.
    pub fn of(period: u64, time_s: f64, threads: &'a [ThreadSample]) -> Self {
        PeriodInput {
            period,
            time_s,
            threads,
            numa_tick: false,
            progress: None,
            waiting: None,
            queued: None,
            others: None,
            remote: None,
            others_by_core: None,
            wake_slice_s: None,
            cores: None,
            bubbles: None,
        }
    }

    /// The application's progress over the period: the target's own
    /// measure, else the sum of the threads' speeds (`None` when no thread
    /// was measured). What the do-no-harm guard compares.
    pub fn progress_or_speed_sum(&self) -> Option<f64> {
        self.progress.or_else(|| {
            let speeds = self.threads.iter().filter_map(|t| objective::sanitise_speed(t.speed));
            Some(speeds.sum::<f64>()).filter(|_| self.threads.iter().any(|t| t.speed.is_some()))
        })
    }
}

/// A policy's answer for one period, aligned with `PeriodInput::threads`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Decision {
    /// Index into `Layout::places` for every thread.
    pub place: Vec<usize>,
    /// The utility each thread learned from this period (NaN where none),
    /// for traces and summaries.
    pub utility: Vec<f64>,
}

/// A scheduling policy: one decision per core-level period.
pub trait Policy: Send {
    /// Short name for tables and traces (`os`, `static`, `learn:mean`, ...).
    fn name(&self) -> String;
    /// Decide where every live thread runs during the next period.
    fn decide(&mut self, input: &PeriodInput<'_>) -> Decision;

    /// The next [`PeriodInput`] should say where each thread ran
    /// ([`PeriodInput::cores`]): the target reads it only when asked.
    fn wants_cores(&self) -> bool {
        false
    }

    /// What the do-no-harm guard did, for policies that have one.
    fn guard_stats(&self) -> Option<GuardStats> {
        None
    }

    /// Which arm of the do-no-harm guard places the period just decided,
    /// for policies that have one.
    fn guard_arm(&self) -> Option<Arm> {
        None
    }
}
