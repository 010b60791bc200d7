//! `pinlearn sim`: a simulated many-core NUMA machine that the unchanged
//! engine and policies run against through the same
//! [`Target`](pinlearn_engine::Target) seam as a
//! real process, in simulated time.
//!
//! ```text
//!   SimOptions ─► Plan: Experiment (Topology, WorkloadSpec, MachineParams, engine Settings)
//!      │                × scenarios (A.1 … C.3, D) × schedulers × seeds
//!      ▼
//!   Experiment::prepare(scenario): cores of the scenario ─► Places, BackgroundSchedule,
//!      │                           LoadGame + its optimum (best-static)
//!      ▼
//!   Experiment::run(scheduler, seed)
//!      │   Engine (pinlearn-engine, unchanged) with OsPolicy | StaticPolicy |
//!      │          FixedPolicy(best-static) | LearnPolicy (pinlearn-policy, unchanged)
//!      │   loop every T_CPU of simulated time:
//!      │      engine.step(&mut SimMachine, t) ──Target::observe──► speeds
//!      │                                      ──Target::place────► thread → core / node / machine
//!      │      SimMachine::advance_to(t + T_CPU)   fluid model, event by event
//!      ▼
//!   RunRecord per run (pinlearn-experiment) ─► the shared table (stdout), --json, --plot
//! ```
//!
//! # The model
//!
//! **Machine.** The cores of a [`Topology`](pinlearn_topology::Topology)
//! (hwloc synthetic string or XML), each with a capacity `c_j` (1.0 =
//! nominal) and a node. A scenario gives the program the first cores of
//! every node; the scenario (pinlearn-experiment) says which cores carry
//! the other program when ([`background`]).
//!
//! **Fair sharing.** Thread `i` has a CFS weight `w_i` (1 = nice 0). On core
//! `j` the runnable threads (working *or spinning*) and the background
//! program share the core in proportion to their weights, as Linux's fair
//! class does between entities of one run queue:
//!
//! ```text
//!   W_j     = b_j(t) + Σ_{runnable i on j} w_i
//!   share_i = w_i / W_j                       fraction of time thread i runs
//!   cpu_i   = share_i · c_j                   nominal core-seconds per second
//! ```
//!
//! **Background load.** Another program on core `j` is one always-runnable
//! entity of weight `b_j(t)`, piecewise constant in time: the entity its
//! autogroup puts on that run queue. `b = 2` is two CPU-bound threads; alone
//! with one of our threads it takes `b / (1 + b)` of the core.
//!
//! **Sessions** (`MachineParams::load_session`). In the program's session
//! (above) everything competes thread against thread. In a session of its
//! own (autogroup, as `pinlearn bench` loads), the other program's group
//! weight `W` is split over the `k` cores it loads (`b_j = W / k`), and the
//! program's group (weight 1) over its cores by runnable weight:
//!
//! ```text
//!   a_j = R_j / R            R_j: runnable program weight on j, R: on all cores
//!   cpu_i = w_i / R_j · a_j / (a_j + b_j) · c_j
//!   balancer load_j = b_j + a_j          (Linux's h_load)
//! ```
//!
//! Workers that sleep while they wait (blocking barriers, a pipeline's
//! queues), two or more on a core, preempt the other session's program at
//! their wake-ups: together they take up to 0.9 of the core, `min(1, slice
//! / grain)` of the way there from their share by weight (the grain: how
//! long a thread works between two waits, `--grain`; the slice: Linux's,
//! 0.7 ms × (1 + log2(min(CPUs, 8)))). A program's main thread, asleep in
//! join (`WorkloadSpec::main_thread`, set by calibration), never wakes.
//! A pipeline stage whose consumers all live alone (among the program's
//! workers) beside the other session's program waits for its slices; where
//! the grain is given, their producers fill the queue meanwhile and block on
//! it, runnable only `(min(L, B) + D) / (L + D)` of the time (L the slice,
//! B the time to fill the queue, D the time to drain it again).
//!
//! **NUMA.** A thread's memory lives on the node where it first did work
//! (first touch). With memory intensity `m_i` ∈ [0, 1] and NUMA factor `F`
//! (remote/local access cost), a thread running on another node progresses
//! `1 + (F − 1) · m_i` times slower:
//!
//! ```text
//!   work rate_i = cpu_i / (1 + (F − 1) · m_i · [node(core_i) ≠ memory node_i])
//! ```
//!
//! **Memory bandwidth** (`MachineParams::memory_bandwidth`, off by default).
//! A node's memory serves `B` cores' worth of threads with `m = 1` running
//! flat out; where the working threads whose memory is there ask for more,
//! `D = Σ rate_i · m_i > B`, each one's work also runs `(1 − m_i) + m_i · D /
//! B` times slower, and the work is sized so that the program alone still
//! takes its duration.
//!
//! **Migration cost.** A thread that changes core after it has run owes
//! `core_migration_s` of CPU time (4× that when it changes node) during which
//! it runs but makes no progress (cache and TLB refill).
//!
//! **Time.** Rates are constant between events, so the machine integrates
//! exactly from event to event: a chunk of work ends, a migration debt is
//! paid, a spin times out, the background changes, the balancer ticks
//! (every `balance_interval_s`, 16 ms by default) or the engine's period
//! (T_CPU from [`Settings`](pinlearn_engine::Settings), 50 ms by default)
//! ends. Steps are therefore at most one balancer interval long. The NUMA
//! period is the engine's (`Settings::numa_every`).
//!
//! **The OS.** A thread whose place is wider than a core (the OS baseline
//! puts every thread on the whole machine; the learner may pick a node) gets
//! its core from a model of Linux's scheduler, which sees runnable load only
//! (`W_j`, spinning threads and background included) and never memory:
//! - fork: the node with the least load per capacity, then its idlest core;
//! - wakeup (`select_idle_sibling`): stay if the previous core is idle, else
//!   the first idle core of the same node, else stay;
//! - newidle: a core that goes idle pulls one runnable thread from the
//!   busiest core of its node;
//! - periodic: every balancer tick, within each node, the least loaded cores
//!   pull one thread each from the busiest; every 4th tick, one thread moves
//!   from the busiest node to the idlest. A move needs
//!   `W_src / c_src > pct · W_dst / c_dst` (pct 1.17 in a node, 1.25 across
//!   nodes: the stickiness) and must lower the pair's maximum
//!   (`(W_dst + w_i) / c_dst < W_src / c_src`); the thread is drawn at random.
//!
//! Threads pinned to a core stay there.
//!
//! **Measurement** ([`SimMetric`]), per engine period of length `T`, with
//! multiplicative noise `· max(0, 1 + σ·z)`, `z ~ N(0, 1)`:
//! - `cpu` (default, what the real schedstat probe reads): `Σ cpu_i dt /
//!   Σ_runnable dt` = run/(run+wait) while runnable, times capacity; `None`
//!   when the thread was runnable less than 2% of the period (as the real
//!   probe). It cannot see remote memory or spinning.
//! - `heartbeat`: work done / `T` (progress rate; 0 while blocked).
//! - `instructions`: work rate while working, full `cpu_i` while spinning or
//!   paying a migration: busy-waiting counts as progress, as in the papers.
//!
//! **The application's progress** (what the guard compares), per period: the
//! work done / `T` where the program beats (`WorkloadSpec::heartbeats`, or
//! the `heartbeat` metric); else what a live target reports without
//! heartbeats: the threads' CPU time in working code (`useful`; all of it
//! with `cpu`), or their summed `instructions`.
//!
//! **Calibration** ([`calibrate`]): the cells of a real `pinlearn bench`
//! simulated on its topology, ratios side by side.
//!
//! **Workloads** ([`workload`]): `independent`, `barrier`, `barrier-spin`
//! (spin-then-block with `--spin`), `pipeline`. Completion is the simulated
//! time at which the last thread finishes.
//!
//! **Baselines** (`pinlearn_experiment::Scheduler`): `os` (`OsPolicy`), `static`
//! (`StaticPolicy`), `best-static` (the optimum of the load game, see
//! [`game`]), `learn[:objective]` (`LearnPolicy`). Only `best-static` is a
//! policy of this crate ([`FixedPolicy`]): it applies an assignment computed
//! in advance and learns nothing.

pub mod background;
pub mod calibrate;
pub mod command;
pub mod experiment;
pub mod game;
pub mod machine;
pub mod report;
pub mod workload;

use std::path::PathBuf;

use pinlearn_engine::EngineError;
use pinlearn_topology::TopologyError;

pub use background::BackgroundSchedule;
pub use command::{Plan, SimOptions, run, run_plan};
pub use experiment::{Experiment, Prepared, RunResult};
pub use game::{FixedPolicy, LoadGame, Optimum};
pub use machine::{MachineParams, MachineTotals, SimMachine, SimMetric};
pub use workload::{Activity, PipelineStages, Program, WorkloadKind, WorkloadSpec};

/// Why `pinlearn sim` could not run; one line each.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// An option or file content is wrong; nothing ran.
    #[error("{0}")]
    BadInput(String),
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("{0}")]
    Output(String),
    #[error("cannot draw the plot {path}: {reason}")]
    Plot { path: PathBuf, reason: String },
}

impl SimError {
    /// True when the user asked for something impossible (exit status 2).
    pub fn is_bad_input(&self) -> bool {
        match self {
            SimError::BadInput(_) | SimError::Topology(_) => true,
            SimError::Engine(e) => e.exit_status() == 2,
            SimError::Output(_) | SimError::Plot { .. } => false,
        }
    }
}
