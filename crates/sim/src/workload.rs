//! What the simulated threads do: the programs of `--workload`, as state
//! machines over work chunks, modelled on the real workloads of
//! `pinlearn work` (crates/workloads).
//!
//! ```text
//!   WorkloadSpec (kind, threads, weights, duration, spin, stages)
//!        │ build(cores)          sizes the work so the run takes about
//!        ▼                       `duration` seconds on the idle cores
//!   Program { tasks[i] = (activity, remaining work) }
//!        │      ▲
//!        │      │ machine integrates: remaining -= progress rate · h
//!        ▼      │
//!   settle(now): a Work task whose chunk is done, or a Spin task whose spin
//!   time is over, changes activity:
//!     independent   Work ─► Done
//!     barrier       Work ─► Block (or Spin until now+spin) ─► all Work when the last arrives
//!                   (with `vary_rounds`, each thread's round work is drawn in
//!                   ((1 - j) w, w], so threads arrive apart as on a real machine)
//!     heat          as barrier (blocking); each thread also reads its
//!                   neighbours' edge rows (see `WorkloadSpec::data_shares`)
//!     pipeline      Work ─► push item downstream (Block while the queue is full)
//!                        ─► pop next item (Block while the queue is empty) ─► Work / Done
//!     fib           a tree of threads created during the run: an inner thread
//!                   works a short spawn chunk, its two children are born
//!                   (Unborn ─► Work, reported in `take_born`), it blocks until
//!                   both are Done, then it is Done; leaves work ∝ fib(n - d)
//!   tasks that went Block ─► Work are reported as woken (the OS places them).
//!   main_thread: one more task after the workers, asleep (Block) all along,
//!                with the first thread key, as a real program's main thread
//!                waiting in join.
//! ```
//!
//! Work is measured in nominal core-seconds: a thread alone on a core of
//! capacity 1.0 with local memory does one unit per second.

use std::fmt;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Work left below this many core-seconds counts as done (absorbs rounding).
pub const WORK_EPSILON: f64 = 1e-9;

/// Work of one barrier round per thread at weight 1 on an idle machine with
/// one thread per core, in core-seconds.
const ROUND_SECONDS: f64 = 0.1;

/// Rows of the `heat` plate (the real workload's default, `pinlearn work heat`).
pub const HEAT_ROWS: usize = 4096;

/// Work of one pipeline item at the bottleneck stage, in core-seconds.
const ITEM_SECONDS: f64 = 0.025;

/// Work of creating two threads (`fib`'s inner threads), in core-seconds.
const SPAWN_SECONDS: f64 = 1e-4;

/// The thread key (1, 2, ...) of task `index` of a program with `workers`
/// workers among `tasks` threads: the main thread (task `workers`, when
/// there is one) comes first, as on a real machine (the lowest thread id),
/// then the workers in index order.
fn thread_key(index: usize, workers: usize, tasks: usize) -> u64 {
    if tasks == workers {
        index as u64 + 1
    } else if index == workers {
        1
    } else {
        index as u64 + 2
    }
}

/// The task index of thread key `key` ([`thread_key`]'s inverse), `None`
/// for a key no task has.
fn task_index(key: u64, workers: usize, tasks: usize) -> Option<usize> {
    let index = if tasks == workers {
        (key as usize).checked_sub(1)?
    } else if key == 1 {
        workers
    } else {
        (key as usize).checked_sub(2)?
    };
    (index < tasks).then_some(index)
}

/// The programs `--workload` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// Every thread has its own work and ends when it is done.
    Independent,
    /// Rounds of equal work separated by a barrier; waiting threads block.
    Barrier,
    /// As `Barrier`, but waiting threads spin (for `--spin` seconds, or
    /// until released), runnable and making no progress.
    BarrierSpin,
    /// Stages of unequal work per item over bounded queues; waiting threads
    /// block.
    Pipeline,
    /// Heat conduction (`pinlearn work heat`): blocking barrier rounds, and
    /// each thread's memory accesses partly go to its neighbours' stripes.
    Heat,
    /// Divide-and-conquer Fibonacci (`pinlearn work fib`): `threads` leaves
    /// of a tree of threads created while the program runs.
    Fib,
}

impl WorkloadKind {
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Independent => "independent",
            WorkloadKind::Barrier => "barrier",
            WorkloadKind::BarrierSpin => "barrier-spin",
            WorkloadKind::Pipeline => "pipeline",
            WorkloadKind::Heat => "heat",
            WorkloadKind::Fib => "fib",
        }
    }
}

impl std::str::FromStr for WorkloadKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        [
            WorkloadKind::Independent,
            WorkloadKind::Barrier,
            WorkloadKind::BarrierSpin,
            WorkloadKind::Pipeline,
            WorkloadKind::Heat,
            WorkloadKind::Fib,
        ]
        .into_iter()
        .find(|kind| kind.name() == text)
        .ok_or_else(|| {
            format!("unknown workload {text:?}: use independent, barrier, barrier-spin, pipeline, heat or fib")
        })
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything that defines the simulated program.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadSpec {
    pub kind: WorkloadKind,
    pub threads: usize,
    /// Per-thread CFS weight, cycled over the threads (1.0 = nice 0). For
    /// `independent` and the barrier workloads a thread's work is also
    /// proportional to its weight, which makes the run the load-balancing
    /// game of paper 000 §V (u_i = w_i / load of its core).
    pub weights: Vec<f64>,
    /// Seconds the run takes on the idle cores it is given (sizes the work).
    pub duration_s: f64,
    /// `barrier-spin`: seconds a waiting thread spins before it blocks
    /// (`None`: it spins until released).
    pub spin_s: Option<f64>,
    /// `pipeline`: relative work per item of each stage.
    pub stages: Vec<f64>,
    /// `pipeline`: capacity of each queue between stages, in items.
    pub queue_capacity: u64,
    /// Share of a thread's time spent on memory accesses, in [0, 1]: the
    /// NUMA slowdown is proportional to it.
    pub memory_intensity: f64,
    /// How long a thread of the real program the run stands for works
    /// between two waits (a barrier round, a pipeline item), in seconds;
    /// `None`: often enough that its waking threads take all they can from
    /// another session's program (`machine.rs`, wake-up preemption), as
    /// aco's sub-millisecond rounds do. The simulated rounds (0.1 s) and
    /// items (25 ms) keep their length, which the fluid model does not need
    /// shorter: that preemption and the turns of a spinning program's
    /// threads on a shared core depend on the grain (`machine.rs`), and
    /// `spin_s` is then the real program's, a spin of `spin_s / grain_s`
    /// of a simulated round's work.
    pub grain_s: Option<f64>,
    /// The program also has the main thread that created its workers and
    /// sleeps in `join` until they end, as every `pinlearn work` program
    /// does: the first thread (key 1), asleep all along, which round-robin
    /// placements count like any other (every workload but `fib`, whose
    /// root thread is its own; calibration against real runs sets it).
    pub main_thread: bool,
    /// The program reports its progress, as the papers' workloads do with
    /// heartbeats: the guard then compares the work it does per second. By
    /// default it reports nothing, like a program nobody changed, and the
    /// manager sees only what the threads' CPU time shows
    /// (`SimMachine::progress_of`).
    pub heartbeats: bool,
}

impl Default for WorkloadSpec {
    /// `pinlearn sim`'s defaults: 40 independent threads of equal weight,
    /// 60 s of work, memory intensity 0.3.
    fn default() -> Self {
        WorkloadSpec {
            kind: WorkloadKind::Independent,
            threads: 40,
            weights: vec![1.0],
            duration_s: 60.0,
            spin_s: None,
            stages: vec![2.0, 1.0, 1.0],
            queue_capacity: 64,
            memory_intensity: 0.3,
            grain_s: None,
            main_thread: false,
            heartbeats: false,
        }
    }
}

impl WorkloadSpec {
    /// The threads that do the program's work: `threads`, except for
    /// `fib`, whose `threads` leaves come with the inner threads that
    /// created them (2 x leaves - 1), and `pipeline`, which has at least one
    /// thread per stage (as `pinlearn work pipeline` does).
    pub fn workers(&self) -> usize {
        match self.kind {
            WorkloadKind::Fib => (2 * self.threads).saturating_sub(1),
            WorkloadKind::Pipeline => self.threads.max(self.stages.len()),
            _ => self.threads,
        }
    }

    /// Every thread the simulated program has over its run: its workers,
    /// then the main thread if it has one (task index `workers()`).
    pub fn tasks(&self) -> usize {
        self.workers() + usize::from(self.main_thread && self.kind != WorkloadKind::Fib)
    }

    /// The thread key of task `index` ([`thread_key`]).
    pub fn key_of(&self, index: usize) -> u64 {
        thread_key(index, self.workers(), self.tasks())
    }

    /// The CFS weight of thread `index`.
    pub fn weight(&self, index: usize) -> f64 {
        if self.weights.is_empty() {
            1.0
        } else {
            self.weights[index % self.weights.len()]
        }
    }

    /// For `pipeline`: the stage of each thread. One thread per stage, then
    /// every extra thread to the stage with the highest work per thread (ties
    /// to the earlier stage), as the real pipeline workload does.
    pub fn pipeline_stages(&self) -> Vec<usize> {
        let stages = self.stages.len().max(1);
        let mut per_stage = vec![0usize; stages];
        let mut stage_of = Vec::with_capacity(self.workers());
        for index in 0..self.workers() {
            let stage = if index < stages {
                index
            } else {
                (0..stages)
                    .max_by(|&a, &b| {
                        let load = |s: usize| self.stage_work(s) / per_stage[s] as f64;
                        load(a).total_cmp(&load(b)).then(b.cmp(&a))
                    })
                    .unwrap_or(0)
            };
            per_stage[stage] += 1;
            stage_of.push(stage);
        }
        stage_of
    }

    /// Where each thread's memory accesses go: `(thread whose data it is,
    /// share)`. Its own data only, except for `heat`, where a thread reads
    /// one edge row of each neighbour per step besides its own stripe: with
    /// the real workload's plate of [`HEAT_ROWS`] rows split into one stripe
    /// per thread, a neighbour's share is 1 / (stripe rows + 2).
    pub fn data_shares(&self) -> Vec<Vec<(usize, f64)>> {
        let n = self.workers();
        let own = |i: usize| vec![(i, 1.0)];
        // The main thread, if any, reads only its own data.
        let main = (n..self.tasks()).map(own);
        if self.kind != WorkloadKind::Heat || n < 2 {
            return (0..n).map(own).chain(main).collect();
        }
        let stripe = (HEAT_ROWS as f64 / n as f64).max(1.0);
        let edge = 1.0 / (stripe + 2.0);
        (0..n)
            .map(|i| {
                let neighbours: Vec<usize> = [i.checked_sub(1), (i + 1 < n).then_some(i + 1)]
                    .into_iter()
                    .flatten()
                    .collect();
                let mut shares = vec![(i, 1.0 - edge * neighbours.len() as f64)];
                shares.extend(neighbours.into_iter().map(|j| (j, edge)));
                shares
            })
            .chain(main)
            .collect()
    }

    fn stage_work(&self, stage: usize) -> f64 {
        self.stages.get(stage).copied().unwrap_or(1.0)
    }

    /// What each thread asks of a core when the program runs at the pace of
    /// an unloaded machine, in CFS-weight units: the thread's weight for
    /// `independent` and the barrier workloads; for `pipeline`, the share of
    /// a core the thread needs at the bottleneck stage's pace. The load
    /// model behind `best-static` and the makespan figures uses it.
    pub fn demands(&self) -> Vec<f64> {
        let workers: Vec<f64> = match self.kind {
            WorkloadKind::Pipeline => {
                let stage_of = self.pipeline_stages();
                let mut per_stage = vec![0usize; self.stages.len().max(1)];
                for &s in &stage_of {
                    per_stage[s] += 1;
                }
                let per_thread = |s: usize| self.stage_work(s) / per_stage[s].max(1) as f64;
                let bottleneck = (0..per_stage.len()).map(per_thread).fold(0.0, f64::max);
                stage_of
                    .iter()
                    .map(|&s| {
                        if bottleneck > 0.0 {
                            per_thread(s) / bottleneck
                        } else {
                            1.0
                        }
                    })
                    .collect()
            }
            // Inner threads wait in join for nearly the whole run.
            WorkloadKind::Fib => fib_tree(self.threads)
                .iter()
                .enumerate()
                .map(|(i, node)| if node.children.is_none() { self.weight(i) } else { 0.0 })
                .collect(),
            _ => (0..self.workers()).map(|i| self.weight(i)).collect(),
        };
        // The main thread sleeps all along: it asks for nothing.
        let main = std::iter::repeat_n(0.0, self.tasks() - self.workers());
        workers.into_iter().chain(main).collect()
    }

    /// The program, with work sized so that it takes about `duration_s` on
    /// `cores` idle cores of capacity 1.
    pub fn build(&self, cores: usize) -> Program {
        let cores = cores.max(1) as f64;
        if self.kind == WorkloadKind::Fib {
            return self.build_fib(cores);
        }
        let n = self.workers();
        let weights: Vec<f64> = (0..n).map(|i| self.weight(i)).collect();
        let total_weight: f64 = weights.iter().sum();
        let max_weight = weights.iter().copied().fold(0.0, f64::max);
        // Work per unit of weight such that max(total / cores, largest) = duration.
        let lower_bound_per_unit = (total_weight / cores).max(max_weight);
        let per_unit = if lower_bound_per_unit > 0.0 {
            self.duration_s / lower_bound_per_unit
        } else {
            0.0
        };
        let state = match self.kind {
            WorkloadKind::Fib => unreachable!("built above"),
            WorkloadKind::Independent => {
                let tasks = weights.iter().map(|w| Task::work(w * per_unit)).collect();
                return self.with_main_thread(Program {
                    tasks,
                    state: ProgramState::Independent,
                    born: Vec::new(),
                    workers: n,
                });
            }
            WorkloadKind::Barrier | WorkloadKind::BarrierSpin | WorkloadKind::Heat => {
                let rounds = (self.duration_s / ROUND_SECONDS).round().max(1.0) as u64;
                let round_work: Vec<f64> = weights.iter().map(|w| w * per_unit / rounds as f64).collect();
                let wait = match (self.kind, self.spin_s, self.grain_s) {
                    (WorkloadKind::Barrier | WorkloadKind::Heat, _, _) => Wait::Block,
                    // The real program's spin over its grain, as a share of
                    // a simulated round's work.
                    (_, Some(spin), Some(grain)) if grain > 0.0 && grain.is_finite() => {
                        let round = round_work.iter().sum::<f64>() / n.max(1) as f64;
                        Wait::Spin(spin / grain * round)
                    }
                    (_, Some(spin), _) => Wait::Spin(spin),
                    (_, None, _) => Wait::Spin(f64::INFINITY),
                };
                ProgramState::Barrier(BarrierState {
                    jitter: None,
                    round: 0,
                    rounds,
                    round_work,
                    arrived: 0,
                    wait,
                })
            }
            WorkloadKind::Pipeline => {
                let stage_of = self.pipeline_stages();
                let stages = self.stages.len().max(1);
                let mut stage_threads = vec![Vec::new(); stages];
                for (thread, &stage) in stage_of.iter().enumerate() {
                    stage_threads[stage].push(thread);
                }
                let bottleneck_work = (0..stages)
                    .map(|s| self.stage_work(s) / stage_threads[s].len().max(1) as f64)
                    .fold(0.0, f64::max);
                // Scale so the bottleneck stage's item costs ITEM_SECONDS per thread.
                let scale = if bottleneck_work > 0.0 {
                    ITEM_SECONDS / bottleneck_work
                } else {
                    ITEM_SECONDS
                };
                let stage_work: Vec<f64> = (0..stages).map(|s| self.stage_work(s) * scale).collect();
                let per_item: f64 = stage_work.iter().sum();
                // Items/s with every thread on its own core, capped by the cores.
                let pace = (0..stages)
                    .map(|s| stage_threads[s].len() as f64 / stage_work[s].max(f64::MIN_POSITIVE))
                    .fold(f64::INFINITY, f64::min)
                    .min(cores / per_item.max(f64::MIN_POSITIVE));
                let total = (pace * self.duration_s).round().max(1.0) as u64;
                ProgramState::Pipeline(PipelineState {
                    stage_of,
                    stage_work,
                    stage_threads,
                    queue: vec![0; stages.saturating_sub(1)],
                    capacity: self.queue_capacity.max(1),
                    total,
                    started: 0,
                    finished: 0,
                    holding: vec![false; n],
                })
            }
        };
        let mut program = Program {
            tasks: vec![Task::idle(); n],
            state,
            born: Vec::new(),
            workers: n,
        };
        match &program.state {
            ProgramState::Barrier(barrier) => {
                for (task, &work) in program.tasks.iter_mut().zip(&barrier.round_work) {
                    *task = Task::work(work);
                }
            }
            ProgramState::Pipeline(_) => {
                let mut woken = Vec::new();
                program.settle_pipeline(&mut woken);
            }
            ProgramState::Independent | ProgramState::Fib(_) => {}
        }
        self.with_main_thread(program)
    }

    /// `program` with the main thread after its workers, asleep until they
    /// end, if the spec has one.
    fn with_main_thread(&self, mut program: Program) -> Program {
        if self.tasks() > self.workers() {
            program.tasks.push(Task {
                activity: Activity::Block,
                remaining: 0.0,
            });
        }
        program
    }

    /// `fib`: the first thread works its spawn chunk (or, alone, the whole
    /// computation); every other thread is unborn. Leaf work is sized like
    /// `independent`'s: max(total / cores, largest leaf) = `duration_s`.
    fn build_fib(&self, cores: f64) -> Program {
        let tree = fib_tree(self.threads);
        // fib(n - less) / fib(n) → φ^-less for large n.
        let golden = (1.0 + 5f64.sqrt()) / 2.0;
        let relative: Vec<f64> = tree
            .iter()
            .map(|node| {
                if node.children.is_none() {
                    golden.powi(-(node.less as i32))
                } else {
                    0.0
                }
            })
            .collect();
        let total: f64 = relative.iter().sum();
        let largest = relative.iter().copied().fold(0.0, f64::max);
        let bound = (total / cores).max(largest);
        let scale = if bound > 0.0 { self.duration_s / bound } else { 0.0 };
        // Every leaf has some work: a leaf must finish through `settle` to
        // end its ancestors.
        let leaf_work: Vec<f64> = relative
            .iter()
            .map(|r| if *r > 0.0 { (r * scale).max(SPAWN_SECONDS) } else { 0.0 })
            .collect();
        let mut tasks = vec![
            Task {
                activity: Activity::Unborn,
                remaining: 0.0,
            };
            tree.len()
        ];
        tasks[0] = Task::work(if tree[0].children.is_some() {
            SPAWN_SECONDS
        } else {
            leaf_work[0]
        });
        let pending = tree
            .iter()
            .map(|node| if node.children.is_some() { 2 } else { 0 })
            .collect();
        let workers = tasks.len();
        Program {
            tasks,
            state: ProgramState::Fib(FibState {
                tree,
                leaf_work,
                pending,
            }),
            born: Vec::new(),
            workers,
        }
    }
}

/// One thread of the `fib` tree, in creation order (parents first).
#[derive(Clone, Debug, PartialEq)]
pub struct FibNode {
    /// The thread that creates it; `None`: the first thread.
    pub parent: Option<usize>,
    /// The two threads it creates (fib(n-1), fib(n-2)); `None`: a leaf.
    pub children: Option<[usize; 2]>,
    /// How much smaller its argument is than the first thread's n.
    pub less: u32,
}

/// The tree of `fib` with `leaves` leaves: the first child of a node gets
/// the larger half of its leaves and computes fib(n-1), the second fib(n-2),
/// as `pinlearn work fib` does. Nodes in creation order.
pub fn fib_tree(leaves: usize) -> Vec<FibNode> {
    fn grow(tree: &mut Vec<FibNode>, parent: Option<usize>, leaves: usize, less: u32) -> usize {
        let index = tree.len();
        tree.push(FibNode {
            parent,
            children: None,
            less,
        });
        if leaves > 1 {
            let first = grow(tree, Some(index), leaves.div_ceil(2), less + 1);
            let second = grow(tree, Some(index), leaves / 2, less + 2);
            tree[index].children = Some([first, second]);
        }
        index
    }
    let mut tree = Vec::with_capacity((2 * leaves).saturating_sub(1));
    grow(&mut tree, None, leaves.max(1), 0);
    tree
}

/// What a thread is doing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Activity {
    /// Runnable, progressing on its current chunk.
    Work,
    /// Runnable, busy-waiting without progress; blocks at `until` (seconds)
    /// if still waiting.
    Spin { until: f64 },
    /// Not runnable: sleeping in the kernel.
    Block,
    /// Finished: the thread has exited.
    Done,
    /// Not created yet (`fib`): the thread does not exist.
    Unborn,
}

impl Activity {
    /// Runnable threads compete for their core (spinning ones too).
    pub fn runnable(self) -> bool {
        matches!(self, Activity::Work | Activity::Spin { .. })
    }

    /// The thread exists: created and not yet ended.
    pub fn exists(self) -> bool {
        !matches!(self, Activity::Done | Activity::Unborn)
    }
}

/// One thread's program state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Task {
    pub activity: Activity,
    /// Work left in the current chunk (core-seconds), meaningful in `Work`.
    pub remaining: f64,
}

impl Task {
    fn work(amount: f64) -> Self {
        Task {
            activity: if amount > WORK_EPSILON {
                Activity::Work
            } else {
                Activity::Done
            },
            remaining: amount,
        }
    }

    fn idle() -> Self {
        Task {
            activity: Activity::Block,
            remaining: 0.0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Wait {
    Block,
    /// Spin for this many seconds (infinite: until released), then block.
    Spin(f64),
}

#[derive(Clone, Debug)]
struct BarrierState {
    /// Each round's work of a thread is `round_work[i]` times a factor drawn
    /// in (1 - fraction, 1] (`Program::vary_rounds`; `None`: exactly the same).
    jitter: Option<RoundJitter>,
    round: u64,
    rounds: u64,
    round_work: Vec<f64>,
    arrived: usize,
    wait: Wait,
}

/// How much barrier rounds vary, and the draws.
#[derive(Clone, Debug)]
struct RoundJitter {
    fraction: f64,
    /// Boxed: the generator is far larger than the rest of the program state.
    rng: Box<ChaCha8Rng>,
}

impl BarrierState {
    /// The factor of a thread's next round work: drawn in (1 - fraction, 1].
    fn factor(&mut self) -> f64 {
        self.jitter
            .as_mut()
            .map_or(1.0, |jitter| 1.0 - jitter.fraction * jitter.rng.random::<f64>())
    }
}

#[derive(Clone, Debug)]
struct PipelineState {
    stage_of: Vec<usize>,
    /// Work per item of each stage, core-seconds.
    stage_work: Vec<f64>,
    stage_threads: Vec<Vec<usize>>,
    /// Items waiting between stage s and s+1.
    queue: Vec<u64>,
    capacity: u64,
    total: u64,
    started: u64,
    finished: u64,
    /// The thread holds a finished item it could not push (queue full).
    holding: Vec<bool>,
}

/// A pipeline's stages as [`Program::stages`] shows them.
#[derive(Clone, Copy, Debug)]
pub struct PipelineStages<'a> {
    /// The threads (task indices) of each stage.
    pub threads: &'a [Vec<usize>],
    /// The work one thread of each stage does per item, core-seconds.
    pub work: &'a [f64],
    /// The capacity of each queue between two stages, items.
    pub capacity: u64,
}

#[derive(Clone, Debug)]
struct FibState {
    tree: Vec<FibNode>,
    /// Work of each leaf, core-seconds (0 for inner threads).
    leaf_work: Vec<f64>,
    /// Children of each thread not yet Done.
    pending: Vec<u8>,
}

#[derive(Clone, Debug)]
enum ProgramState {
    Independent,
    Barrier(BarrierState),
    Pipeline(PipelineState),
    Fib(FibState),
}

/// The state of every thread of the simulated program.
#[derive(Clone, Debug)]
pub struct Program {
    /// The workers' tasks, then the main thread's if the program has one.
    tasks: Vec<Task>,
    state: ProgramState,
    /// Threads created since the last [`Program::take_born`].
    born: Vec<usize>,
    /// How many of `tasks` are workers (the state machines' threads).
    workers: usize,
}

impl Program {
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// How many of the tasks are workers: the main thread, if any, is the
    /// one after them.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// The thread key of task `index` ([`thread_key`]).
    pub fn key_of(&self, index: usize) -> u64 {
        thread_key(index, self.workers, self.tasks.len())
    }

    /// The task of thread key `key` ([`task_index`]).
    pub fn index_of(&self, key: u64) -> Option<usize> {
        task_index(key, self.workers, self.tasks.len())
    }

    /// Records `amount` core-seconds of progress on thread `index`'s chunk.
    pub fn progress(&mut self, index: usize, amount: f64) {
        self.tasks[index].remaining -= amount;
    }

    /// True once every thread has finished.
    pub fn complete(&self) -> bool {
        self.tasks[..self.workers].iter().all(|t| t.activity == Activity::Done)
    }

    /// The threads created since the last call (`fib`), in creation order.
    pub fn take_born(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.born)
    }

    /// The thread that created thread `index` (`fib`); `None` for threads
    /// that exist from the start.
    pub fn creator(&self, index: usize) -> Option<usize> {
        match &self.state {
            ProgramState::Fib(fib) => fib.tree.get(index).and_then(|node| node.parent),
            _ => None,
        }
    }

    /// Makes every barrier round's work vary from thread to thread and
    /// round to round: a thread's work is its share times a factor drawn
    /// uniformly in (1 - `jitter`, 1] from `seed`, the current round's too
    /// (before anything ran). On a real machine no two threads finish a
    /// round at the same instant (interrupts, caches, other programs); with
    /// exactly equal rounds on equally shared cores every thread of the
    /// model arrives at once, none sleeps, and no wake-up is ever placed.
    /// The run stays about as long: the slowest thread's round keeps its
    /// full work. Programs without barrier rounds are unchanged.
    pub fn vary_rounds(&mut self, jitter: f64, seed: u64) {
        let workers = self.workers;
        if let ProgramState::Barrier(barrier) = &mut self.state
            && jitter > 0.0
        {
            barrier.jitter = Some(RoundJitter {
                fraction: jitter.min(1.0),
                rng: Box::new(ChaCha8Rng::seed_from_u64(seed)),
            });
            if barrier.round == 0 && barrier.arrived == 0 {
                for (i, task) in self.tasks[..workers].iter_mut().enumerate() {
                    if task.activity == Activity::Work {
                        task.remaining = barrier.round_work[i] * barrier.factor();
                    }
                }
            }
        }
    }

    /// Barrier rounds completed (0 for other workloads).
    pub fn rounds_done(&self) -> u64 {
        match &self.state {
            ProgramState::Barrier(b) => b.round,
            _ => 0,
        }
    }

    /// The threads sleep while they wait (at barriers, blocking or
    /// spinning a while and then blocking; on a pipeline's empty or full
    /// queues) and are woken again and again: on a real machine such threads
    /// preempt another session's program at each wake-up.
    pub fn sleeps_while_waiting(&self) -> bool {
        match &self.state {
            ProgramState::Barrier(b) => match b.wait {
                Wait::Block => true,
                Wait::Spin(seconds) => seconds.is_finite(),
            },
            ProgramState::Pipeline(_) => true,
            ProgramState::Independent | ProgramState::Fib(_) => false,
        }
    }

    /// A pipeline's stages; `None` for the other programs.
    pub fn stages(&self) -> Option<PipelineStages<'_>> {
        match &self.state {
            ProgramState::Pipeline(p) => Some(PipelineStages {
                threads: &p.stage_threads,
                work: &p.stage_work,
                capacity: p.capacity,
            }),
            _ => None,
        }
    }

    /// Pipeline items that left the last stage (0 for other workloads).
    pub fn items_done(&self) -> u64 {
        match &self.state {
            ProgramState::Pipeline(p) => p.finished,
            _ => 0,
        }
    }

    /// Applies every transition due at `now`: finished chunks and expired
    /// spins. Threads that went from not runnable to runnable are appended
    /// to `woken`.
    pub fn settle(&mut self, now: f64, woken: &mut Vec<usize>) {
        let workers = self.workers;
        let finished: Vec<usize> = (0..self.tasks.len())
            .filter(|&i| self.tasks[i].activity == Activity::Work && self.tasks[i].remaining <= WORK_EPSILON)
            .collect();
        for index in 0..self.tasks.len() {
            if let Activity::Spin { until } = self.tasks[index].activity
                && until <= now
            {
                self.tasks[index].activity = Activity::Block;
            }
        }
        if finished.is_empty() {
            return;
        }
        match &mut self.state {
            ProgramState::Independent => {
                for i in finished {
                    self.tasks[i] = Task {
                        activity: Activity::Done,
                        remaining: 0.0,
                    };
                }
            }
            ProgramState::Barrier(barrier) => {
                for &i in &finished {
                    barrier.arrived += 1;
                    self.tasks[i] = Task {
                        activity: match barrier.wait {
                            Wait::Block => Activity::Block,
                            Wait::Spin(spin) if spin > 0.0 => Activity::Spin { until: now + spin },
                            Wait::Spin(_) => Activity::Block,
                        },
                        remaining: 0.0,
                    };
                }
                if barrier.arrived == workers {
                    let mut arrived_now = vec![false; workers];
                    finished.iter().for_each(|&i| arrived_now[i] = true);
                    barrier.arrived = 0;
                    barrier.round += 1;
                    let last = barrier.round >= barrier.rounds;
                    for (i, task) in self.tasks[..workers].iter_mut().enumerate() {
                        // The threads arriving now were running until now.
                        let was_blocked = task.activity == Activity::Block && !arrived_now[i];
                        *task = if last {
                            Task {
                                activity: Activity::Done,
                                remaining: 0.0,
                            }
                        } else {
                            Task::work(barrier.round_work[i] * barrier.factor())
                        };
                        if was_blocked && task.activity.runnable() {
                            woken.push(i);
                        }
                    }
                }
            }
            ProgramState::Fib(fib) => {
                for i in finished {
                    match fib.tree[i].children {
                        // An inner thread only works its spawn chunk: its
                        // children start, and it waits for them in join.
                        Some(children) => {
                            self.tasks[i] = Task::idle();
                            for child in children {
                                self.tasks[child] = Task::work(if fib.tree[child].children.is_some() {
                                    SPAWN_SECONDS
                                } else {
                                    fib.leaf_work[child]
                                });
                                self.born.push(child);
                            }
                        }
                        None => {
                            // A leaf is done: so is every ancestor whose
                            // children all are (the additions are free).
                            let mut done = Some(i);
                            while let Some(node) = done {
                                self.tasks[node] = Task {
                                    activity: Activity::Done,
                                    remaining: 0.0,
                                };
                                done = fib.tree[node].parent.filter(|&parent| {
                                    fib.pending[parent] -= 1;
                                    fib.pending[parent] == 0
                                });
                            }
                        }
                    }
                }
            }
            ProgramState::Pipeline(pipe) => {
                for &i in &finished {
                    let stage = pipe.stage_of[i];
                    self.tasks[i].remaining = 0.0;
                    self.tasks[i].activity = Activity::Block;
                    if stage + 1 == pipe.stage_work.len() {
                        pipe.finished += 1;
                    } else {
                        pipe.holding[i] = true;
                    }
                }
                // The finishing threads were running: they are not "woken"
                // if they get new work at once.
                let mut woken_here = Vec::new();
                self.settle_pipeline(&mut woken_here);
                woken.extend(woken_here.into_iter().filter(|i| !finished.contains(i)));
            }
        }
    }

    /// Moves items until nothing changes: holders push when there is room,
    /// idle threads pop when there is an item, and threads whose input is
    /// exhausted end.
    fn settle_pipeline(&mut self, woken: &mut Vec<usize>) {
        let ProgramState::Pipeline(pipe) = &mut self.state else {
            return;
        };
        let last_stage = pipe.stage_work.len() - 1;
        loop {
            let mut changed = false;
            for stage in 0..=last_stage {
                for k in 0..pipe.stage_threads[stage].len() {
                    let i = pipe.stage_threads[stage][k];
                    let task = &mut self.tasks[i];
                    if task.activity != Activity::Block {
                        continue;
                    }
                    if pipe.holding[i] {
                        if pipe.queue[stage] < pipe.capacity {
                            pipe.queue[stage] += 1;
                            pipe.holding[i] = false;
                            changed = true;
                        } else {
                            continue;
                        }
                    }
                    // Idle: take the next item.
                    let got_item = if stage == 0 {
                        if pipe.started < pipe.total {
                            pipe.started += 1;
                            true
                        } else {
                            false
                        }
                    } else if pipe.queue[stage - 1] > 0 {
                        pipe.queue[stage - 1] -= 1;
                        true
                    } else {
                        false
                    };
                    if got_item {
                        *task = Task {
                            activity: Activity::Work,
                            remaining: pipe.stage_work[stage],
                        };
                        woken.push(i);
                        changed = true;
                    } else {
                        let upstream_done = stage == 0
                            || (pipe.queue[stage - 1] == 0
                                && pipe.stage_threads[stage - 1]
                                    .iter()
                                    .all(|&j| self.tasks[j].activity == Activity::Done));
                        let task = &mut self.tasks[i];
                        if upstream_done {
                            task.activity = Activity::Done;
                            changed = true;
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: WorkloadKind, threads: usize) -> WorkloadSpec {
        WorkloadSpec {
            kind,
            threads,
            weights: vec![1.0],
            duration_s: 10.0,
            spin_s: None,
            stages: vec![2.0, 1.0, 1.0],
            queue_capacity: 4,
            memory_intensity: 0.0,
            ..WorkloadSpec::default()
        }
    }

    #[test]
    fn heat_threads_read_one_edge_row_of_each_neighbour() {
        let shares = spec(WorkloadKind::Heat, 16).data_shares();
        // 4096 rows / 16 threads: stripes of 256 rows, an edge is 1/258.
        let edge = 1.0 / 258.0;
        assert_eq!(shares[0], vec![(0, 1.0 - edge), (1, edge)]);
        assert_eq!(shares[5], vec![(5, 1.0 - 2.0 * edge), (4, edge), (6, edge)]);
        for thread in &shares {
            let total: f64 = thread.iter().map(|&(_, s)| s).sum();
            assert!((total - 1.0).abs() < 1e-12);
        }
        let own_only = spec(WorkloadKind::Barrier, 3).data_shares();
        assert_eq!(own_only, vec![vec![(0, 1.0)], vec![(1, 1.0)], vec![(2, 1.0)]]);
    }

    #[test]
    fn fib_threads_are_born_as_their_parents_spawn_and_end_bottom_up() {
        let tree = fib_tree(4);
        // Pre-order: fib, fib-0, fib-00, fib-01, fib-1, fib-10, fib-11.
        assert_eq!(tree.len(), 7);
        assert_eq!(tree[0].children, Some([1, 4]));
        assert_eq!(tree[1].children, Some([2, 3]));
        assert_eq!((tree[2].parent, tree[2].less), (Some(1), 2));
        assert_eq!((tree[6].parent, tree[6].less), (Some(4), 4));
        let fib = spec(WorkloadKind::Fib, 4);
        assert_eq!(fib.tasks(), 7);
        assert_eq!(fib.demands(), vec![0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]);
        let mut program = fib.build(4);
        let exists = |p: &Program| p.tasks.iter().filter(|t| t.activity.exists()).count();
        assert_eq!(exists(&program), 1, "only the first thread exists at the start");
        finish_all_chunks(&mut program, 0.0);
        assert_eq!(program.take_born(), vec![1, 4]);
        assert_eq!(program.creator(4), Some(0));
        finish_all_chunks(&mut program, 0.0);
        assert_eq!(program.take_born(), vec![2, 3, 5, 6]);
        assert_eq!(program.tasks[0].activity, Activity::Block, "the parent waits in join");
        // The largest leaf (fib(n-2)) bounds the run: 10 s on 4 idle cores.
        let largest = program.tasks.iter().map(|t| t.remaining).fold(0.0, f64::max);
        assert!((largest - 10.0).abs() < 1e-9, "{largest}");
        assert!(!program.complete());
        finish_all_chunks(&mut program, 0.0);
        assert!(program.complete(), "every leaf done ends its ancestors too");
    }

    /// Runs every Work task to the end of its chunk, `steps` times.
    fn finish_all_chunks(program: &mut Program, now: f64) -> Vec<usize> {
        for i in 0..program.tasks.len() {
            if program.tasks[i].activity == Activity::Work {
                let left = program.tasks[i].remaining;
                program.progress(i, left);
            }
        }
        let mut woken = Vec::new();
        program.settle(now, &mut woken);
        woken
    }

    #[test]
    fn independent_work_is_sized_to_the_duration() {
        // 4 threads of weight 1 on 2 cores: total 4 units of weight, 2 per core.
        let program = spec(WorkloadKind::Independent, 4).build(2);
        for task in program.tasks() {
            assert!((task.remaining - 5.0).abs() < 1e-12, "{task:?}");
        }
        // Weighted: the heaviest thread bounds the run when it is large.
        let mut heavy = spec(WorkloadKind::Independent, 3);
        heavy.weights = vec![4.0, 1.0, 1.0];
        let program = heavy.build(3);
        assert!((program.tasks()[0].remaining - 10.0).abs() < 1e-12);
        assert!((program.tasks()[1].remaining - 2.5).abs() < 1e-12);
    }

    #[test]
    fn barrier_rounds_release_everyone_only_when_the_last_arrives() {
        let mut program = spec(WorkloadKind::Barrier, 3).build(3);
        let rounds = 100; // 10 s / 0.1 s
        let chunk = program.tasks()[0].remaining;
        assert!((chunk * rounds as f64 - 10.0).abs() < 1e-9);
        // Two threads finish their chunk: they block, nobody is woken.
        for i in 0..2 {
            program.progress(i, chunk);
        }
        let mut woken = Vec::new();
        program.settle(0.1, &mut woken);
        assert!(woken.is_empty());
        assert_eq!(program.tasks()[0].activity, Activity::Block);
        assert_eq!(program.tasks()[2].activity, Activity::Work);
        assert_eq!(program.rounds_done(), 0);
        // The last one arrives: the round ends, the two sleepers wake.
        program.progress(2, chunk);
        program.settle(0.2, &mut woken);
        assert_eq!(woken, vec![0, 1]);
        assert_eq!(program.rounds_done(), 1);
        assert!(program.tasks().iter().all(|t| t.activity == Activity::Work));
        for round in 2..=rounds {
            finish_all_chunks(&mut program, round as f64);
        }
        assert!(program.complete());
        assert_eq!(program.rounds_done(), rounds);
    }

    /// Every worker's remaining work (the round's, at its start).
    fn round_works(program: &Program) -> Vec<f64> {
        program.tasks().iter().map(|t| t.remaining).collect()
    }

    #[test]
    fn varied_rounds_draw_each_thread_s_work_below_its_share_from_the_seed() {
        let barrier = spec(WorkloadKind::Barrier, 8);
        let share = barrier.build(8).tasks()[0].remaining;
        let varied = |seed| {
            let mut program = barrier.build(8);
            program.vary_rounds(0.03, seed);
            program
        };
        let mut program = varied(5);
        let mut seen = Vec::new();
        for round in 1..=20 {
            let works = round_works(&program);
            for &w in &works {
                assert!(w > share * 0.97 && w <= share, "round {round}: {w} of {share}");
            }
            seen.extend(works);
            finish_all_chunks(&mut program, round as f64);
        }
        seen.sort_by(f64::total_cmp);
        seen.dedup();
        assert_eq!(seen.len(), 160, "every thread's round differs");
        // The same seed, the same rounds; another, others.
        assert_eq!(round_works(&varied(5)), round_works(&varied(5)));
        assert_ne!(round_works(&varied(5)), round_works(&varied(6)));
        // No jitter, and programs without rounds: unchanged.
        let mut exact = barrier.build(8);
        exact.vary_rounds(0.0, 5);
        assert!(round_works(&exact).iter().all(|&w| w == share));
        let independent = spec(WorkloadKind::Independent, 4);
        let mut program = independent.build(4);
        program.vary_rounds(0.03, 5);
        assert_eq!(round_works(&program), round_works(&independent.build(4)));
    }

    #[test]
    fn spinning_waiters_stay_runnable_then_block_after_the_spin_time() {
        let mut with_spin = spec(WorkloadKind::BarrierSpin, 2);
        with_spin.spin_s = Some(0.5);
        let mut program = with_spin.build(2);
        let chunk = program.tasks()[0].remaining;
        program.progress(0, chunk);
        let mut woken = Vec::new();
        program.settle(1.0, &mut woken);
        assert_eq!(program.tasks()[0].activity, Activity::Spin { until: 1.5 });
        assert!(program.tasks()[0].activity.runnable());
        program.settle(1.4, &mut woken);
        assert!(matches!(program.tasks()[0].activity, Activity::Spin { .. }));
        program.settle(1.5, &mut woken);
        assert_eq!(program.tasks()[0].activity, Activity::Block);

        let mut program = spec(WorkloadKind::BarrierSpin, 2).build(2);
        program.progress(0, chunk);
        program.settle(1.0, &mut woken);
        program.settle(1e9, &mut woken);
        assert!(
            matches!(program.tasks()[0].activity, Activity::Spin { .. }),
            "spins forever"
        );
        // A released spinner was runnable all along: it is not "woken".
        woken.clear();
        program.progress(1, chunk);
        program.settle(1e9, &mut woken);
        assert!(woken.is_empty());
    }

    #[test]
    fn pipeline_threads_follow_the_stage_weights() {
        let s = spec(WorkloadKind::Pipeline, 5);
        // stages 2,1,1: one each, then stage 0 (2/1 = 2), then stage 0 (2/2 = 1 = ties with 1 → earlier).
        assert_eq!(s.pipeline_stages(), vec![0, 1, 2, 0, 0]);
        let demands = s.demands();
        // per thread: stage 0 2/3, stages 1 and 2: 1 → bottleneck 1.
        assert!(
            (demands[0] - 2.0 / 3.0).abs() < 1e-12 && demands[1] == 1.0,
            "{demands:?}"
        );
    }

    #[test]
    fn pipeline_moves_every_item_through_every_stage_once() {
        let mut program = spec(WorkloadKind::Pipeline, 3).build(3);
        let ProgramState::Pipeline(pipe) = &program.state else {
            unreachable!()
        };
        let total = pipe.total;
        assert!(total > 10);
        // Only stage 0 works at first.
        let active: Vec<Activity> = program.tasks().iter().map(|t| t.activity).collect();
        assert_eq!(active, vec![Activity::Work, Activity::Block, Activity::Block]);
        let mut rounds = 0;
        while !program.complete() {
            finish_all_chunks(&mut program, rounds as f64);
            rounds += 1;
            assert!(rounds < 10 * total, "pipeline stalled");
        }
        assert_eq!(program.items_done(), total);
    }

    #[test]
    fn a_full_queue_blocks_its_producer() {
        // Stage 1 never finishes its chunk: stage 0 fills queue 0 (capacity 4) and then holds.
        let mut program = spec(WorkloadKind::Pipeline, 3).build(3);
        for step in 0..10 {
            let left = program.tasks()[0].remaining;
            if program.tasks()[0].activity == Activity::Work {
                program.progress(0, left);
            }
            let mut woken = Vec::new();
            program.settle(step as f64, &mut woken);
        }
        let ProgramState::Pipeline(pipe) = &program.state else {
            unreachable!()
        };
        assert_eq!(pipe.queue[0], 4, "stage 1 took one item, 4 wait");
        assert!(pipe.holding[0]);
        assert_eq!(program.tasks()[0].activity, Activity::Block);
        assert_eq!(program.tasks()[1].activity, Activity::Work);
        // Stage 1 finishes its item: it pops another, which frees room for the holder.
        let left = program.tasks()[1].remaining;
        program.progress(1, left);
        let mut woken = Vec::new();
        program.settle(11.0, &mut woken);
        assert!(woken.contains(&0), "the producer resumes: {woken:?}");
        assert!(woken.contains(&2), "stage 2 got the item: {woken:?}");
    }
}
