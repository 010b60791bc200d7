//! The simulated machine: cores shared fairly by runnable threads, background
//! load, NUMA slowdown, migration cost, a model of Linux's load balancer, and
//! the engine's [`Target`] seam (observe speeds, apply placements).
//!
//! ```text
//!   driver: engine.step(machine, t) ─► Target::observe  speeds since the last call
//!                                   ─► Target::place    thread → place (core, node, machine)
//!           machine.advance_to(t + T_CPU):
//!             loop until t + T_CPU (or the program completes):
//!               due events at `now`:
//!                 background phase change
//!                 program.settle ─► chunks done, barriers, queues, spins expired
//!                                   (barrier rounds vary by up to 3%: threads arrive apart)
//!                 woken threads  ─► wakeup placement (idle core of the node, else stay)
//!                 cores gone idle ─► newidle pull (within the node)
//!                 balance tick   ─► periodic balancing (within nodes; across nodes every k ticks;
//!                                   a core that could not even out a busier one for 0.1 s
//!                                   takes a thread anyway: CPU-bound threads take turns)
//!               step h = time to the next event (chunk end, stall paid, spin end,
//!                        phase change, balance tick, period end); rates are constant over h:
//!                 share_i = w_i / (R_core + b_core)                  same session (R: runnable weight)
//!                         = w_i / R_core · a / (a + b_core)                  own session (groups),
//!                           a = max(R_core, A_core) / (A_all − A_core + max(R_core, A_core))
//!                           (A: the load averages of the threads there, PELT, 32 ms half-life,
//!                           moving with a thread that changes core; updated after each step)
//!                           (wake-up preemption: where 2+ of its workers that sleep while they
//!                           wait, at barriers or queues, live on the core, the program's threads
//!                           take up to 0.9 of it, min(1, slice / grain) of the way there; k
//!                           that spin first, clamp(2 − σ / (k − 1), 0, 1) of that)
//!                 cpu_i   = share_i · cap_core                      (nominal core-seconds per second)
//!                           × (1 − stall_i): a pipeline's producer whose consumers all wait for
//!                           another session's slices blocks on its full queue (grain given)
//!                 work_i  = cpu_i / (1 + (F − 1) · m_i · [memory node ≠ core node])
//!                           / (1 + (k − 1) / k · σ) where k ≥ 2 workers of a program that
//!                           spins while it waits share the core and its grain is given:
//!                           they take turns, all but the last to arrive spinning σ of a
//!                           round's work (a spinner there takes no share of its own)
//!                           / ((1 − m_i) + m_i · max(1, D_n / B)) where the node n of its
//!                           memory is asked for D_n (Σ work rates × m of the threads whose
//!                           memory is there) and serves B (`memory_bandwidth`, if given)
//!               integrate run, wait, cpu, work, instructions over h
//!               NUMA balancing (when on): a thread whose CPU time on one node
//!                 away from its memory exceeds its time elsewhere by
//!                 `numa_balancing_s` takes its memory there
//! ```
//!
//! Only application threads are simulated one by one; the background
//! program is one runnable entity of weight `b_core` per loaded core.

use pinlearn_engine::{EngineError, Places, Target, ThreadInfo};
use pinlearn_experiment::LoadSession;
use pinlearn_policy::{PlaceKind, ThreadKey, ThreadSample};
use pinlearn_topology::CpuSet;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::background::BackgroundSchedule;
use crate::workload::{Activity, PipelineStages, Program, WORK_EPSILON, WorkloadKind, WorkloadSpec};

/// Weight of the program's task group when its session is not the
/// background's (autogroup): one nice-0 thread's worth, split over the
/// cores its runnable threads are on.
const PROGRAM_GROUP_WEIGHT: f64 = 1.0;

/// Half-life of Linux's per-entity load tracking (PELT, 32 ms).
const PELT_HALF_LIFE_S: f64 = 0.032;

/// The share of a core that two or more threads of a program that sleeps
/// while it waits take from another session's program when pinned there
/// together. Measured (`scripts/session-shares`, 2026-11-24): four `pinlearn
/// work aco` threads pinned two per CPU beside a busy loop in its own
/// session left it 0.09 of its CPU, far below its group weight's half, and
/// ran 1.79 s against 1.75 s with no loop at all. Each wake-up at a barrier
/// preempts the loop (EEVDF places a woken entity ahead of one that used up
/// its slice). One such thread per CPU is the round's laggard, rarely
/// sleeps, and got the group weight's share (the loop kept 0.60).
///
/// A woken thread preempts for about one scheduler slice; for the rest of
/// its round the core is shared by weight again. So the program gets this
/// share in proportion `min(1, slice / grain)` (the grain: how long a
/// thread works between two waits, [`WorkloadSpec::grain_s`]): aco's rounds
/// last about 0.3 ms and take it all, binpack's (about 5 ms, blocking
/// barriers too) measured little of it (its pin beside the loop was 9%
/// slower than Linux, aco's 42% faster; docs/results/bench-matrix-2026-11-25).
const WAKE_PREEMPT_SHARE: f64 = 0.9;

/// The grain a program that sleeps while it waits shows the manager where
/// its spec gives none: a round of the papers' iterative programs (aco's
/// last about 0.3 ms), shorter than any slice, as `wake_preempts` assumes.
const UNGIVEN_GRAIN_S: f64 = 0.3e-3;

/// How long a core of a node finds a busier one it cannot even out before
/// it takes one of its threads anyway ([`MachineParams::rotate_after_s`]).
/// Measured (`scripts/busy-loops`, 2026-11-27, Linux 6.18): three busy
/// loops on two CPUs for 20 s ran 12.8-13.7 CPU-seconds each (a model
/// without turns gives 10, 10 and 20) and changed CPU 7 times a second in
/// all, one every 145 ms; five loops (3 + 2) 14 times, one every 72 ms.
const ROTATE_AFTER_S: f64 = 0.1;

/// How much a barrier round's work varies ([`MachineParams::round_jitter`]).
/// Measured (`scripts/round-times`, 2026-11-27, four runs): a loop of
/// about 0.1 s alone on one CPU of this machine, 150 times: successive
/// rounds differ by 0.4-2.1% in the median, and the rounds' sd is 1.4-7.2%
/// (a few rounds up to 43% slower); two factors drawn in (0.97, 1] differ
/// by 1.8% in the median, with an sd of 0.9%. Any jitter at all ends the
/// knife edge (0.1% does in the 2x14 `barrier` B.2 cell); its size matters
/// little.
const ROUND_JITTER: f64 = 0.03;

/// Linux's base scheduler slice (EEVDF's `sysctl_sched_base_slice`, 0.7
/// ms), which the kernel scales by `1 + log2(min(CPUs, 8))`.
const BASE_SLICE_S: f64 = 0.7e-3;

/// The slice Linux gives a woken thread on a machine of `cores` CPUs.
pub(crate) fn scheduler_slice_s(cores: usize) -> f64 {
    let factor = 1 + cores.clamp(1, 8).ilog2();
    BASE_SLICE_S * f64::from(factor)
}

/// How many times slower `k` workers of a program that spins `σ` times a
/// round's work while it waits progress on one core than by their CPU
/// time: they take turns, and of every round's `k` works the first `k - 1`
/// to arrive spin `σ` works' worth each while the others wait behind them
/// (the machine's turns; calibration sizes the real rounds with it).
pub(crate) fn turns_slowdown(k: usize, sigma: f64) -> f64 {
    let k = k.max(1) as f64;
    1.0 + (k - 1.0) / k * sigma
}

/// Per queue of a pipeline (between stage s and s + 1), the share of their
/// time its producers keep while every consumer waits for another session's
/// slices; `None` where the consumers are no faster than the producers (the
/// queue never fills for that). Over one such cycle (slice L, the time B the
/// producers take to fill the queue: its capacity x their real time per
/// item, the stage's share of the slowest stage's `grain`; consumer /
/// producer time per item r < 1) the producers work min(L, B) while the
/// consumers wait and D = min(L, B) r / (1 - r) while they drain the queue,
/// so they keep (min(L, B) + D) / (L + D). Below the simulated items' scale
/// (25 ms), so the fluid queues cannot show it; measured: `pinlearn work
/// pipeline --stages 3,1,1` pinned with its middle stage beside another
/// session's busy loop took 1.9x its time without the loop with queues of
/// 64 items (0.5 ms of its first stage), 0.8x with 4096 (docs/simulator.md).
fn queue_kept(stages: PipelineStages<'_>, grain: f64, slice: f64) -> Vec<Option<f64>> {
    // Each stage's time per item, all its threads together.
    let pace: Vec<f64> = stages
        .threads
        .iter()
        .zip(stages.work)
        .map(|(threads, work)| work / threads.len().max(1) as f64)
        .collect();
    let slowest = pace.iter().copied().fold(0.0, f64::max);
    pace.windows(2)
        .map(|pair| {
            let (producer, consumer) = (pair[0], pair[1]);
            let ratio = consumer / producer.max(f64::MIN_POSITIVE);
            (slowest > 0.0 && ratio < 1.0).then(|| {
                let filling = (stages.capacity as f64 * grain * producer / slowest).min(slice);
                let drain = filling * ratio / (1.0 - ratio);
                (filling + drain) / (slice + drain)
            })
        })
        .collect()
}

/// The process id of the simulated program (one process): what
/// [`Target::info`] reports and [`Target::bind_memory`] accepts.
const PROCESS_ID: u32 = 0;

/// Events closer than this (seconds) count as simultaneous.
const TIME_EPSILON: f64 = 1e-9;

/// Below this share of the period spent runnable, the `cpu` metric reports
/// nothing (the real schedstat probe uses the same threshold).
pub const MIN_RUNNABLE_SHARE: f64 = 0.02;

/// What a thread's speed sample measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SimMetric {
    /// run / (run + wait) while runnable, times the core's capacity: what
    /// the real `cpu` metric reads from schedstat. Blind to NUMA slowdown
    /// and to spinning (a spinner runs).
    Cpu,
    /// Work done per second (like heartbeats): 1.0 = a nominal core's worth.
    /// Spinning and remote memory show as lost speed.
    Heartbeat,
    /// Instructions per second in nominal-core units: work rate while
    /// working, full rate while spinning or paying migration cost (the
    /// papers' metric, which counts busy-waiting as progress).
    Instructions,
    /// Run share times the share of the thread's CPU time spent working
    /// (not spinning, not paying a migration): what CPU-clock samples
    /// classified by waiting code measure on a real machine.
    Useful,
}

impl From<pinlearn_engine::Metric> for SimMetric {
    /// The engine's word for a speed signal; `auto` is `useful` (as on a
    /// real machine where perf allows sampling); `io` is `cpu` (the
    /// simulated programs do no I/O).
    fn from(metric: pinlearn_engine::Metric) -> Self {
        match metric {
            pinlearn_engine::Metric::Auto | pinlearn_engine::Metric::Useful => SimMetric::Useful,
            pinlearn_engine::Metric::Cpu | pinlearn_engine::Metric::Io => SimMetric::Cpu,
            pinlearn_engine::Metric::Heartbeat => SimMetric::Heartbeat,
            pinlearn_engine::Metric::Instructions => SimMetric::Instructions,
        }
    }
}

/// The physical constants of the model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MachineParams {
    /// F ≥ 1: how much slower a fully memory-bound thread runs with its
    /// memory on another node.
    pub numa_factor: f64,
    /// Standard deviation σ of the multiplicative measurement noise.
    pub noise: f64,
    /// CPU time lost (no progress) when a thread changes core in its node.
    pub core_migration_s: f64,
    /// CPU time lost when a thread changes node.
    pub node_migration_s: f64,
    /// Period of the OS balancer within a node.
    pub balance_interval_s: f64,
    /// Balance across nodes every this many ticks.
    pub numa_balance_every: u32,
    /// Within a node, move only if busiest load > pct × least load.
    pub core_imbalance_pct: f64,
    /// Across nodes, the same threshold on the nodes' mean loads.
    pub node_imbalance_pct: f64,
    /// Within a node, a core that has found a busier one for this long
    /// without evening them out (moving a thread would only swap their
    /// loads) takes a thread anyway, as the kernel does once its balancing
    /// has failed (`nr_balance_failed`): CPU-bound threads take turns on
    /// the crowded cores (`None`: never).
    pub rotate_after_s: Option<f64>,
    /// How much a barrier round's work varies from thread to thread and
    /// round to round: each is drawn in (1 - `round_jitter`, 1] of its
    /// share ([`Program::vary_rounds`]), so threads arrive at a barrier
    /// apart and the early ones sleep, as on a real machine (0: all at
    /// once).
    pub round_jitter: f64,
    pub metric: SimMetric,
    /// Whether the background program is a task group of its own (another
    /// session under autogroup) or competes thread against thread.
    pub load_session: LoadSession,
    /// Linux's automatic NUMA balancing: a thread's memory moves to a node
    /// once the thread's CPU-seconds there exceed those it worked anywhere
    /// else (at home or on a third node) since it began working there by
    /// this much ([`numa_balancing`]; `None`: memory stays where it was
    /// first touched).
    pub numa_balancing_s: Option<f64>,
    /// CPU time a thread loses while pinlearn moves the memory it first
    /// touched to another node ([`Target::move_thread_memory`]): the copy
    /// of its pages and the faults on those in flight.
    pub thread_memory_move_s: f64,
    /// How much memory traffic each node's memory serves at once, in cores'
    /// worth of threads of memory intensity 1 running flat out (`None`:
    /// as much as they ask for). Where the threads whose memory is on a
    /// node ask for D > B, each of their memory accesses takes D / B times
    /// as long ([`SimMachine::memory_wait`]). Measured on a host as the
    /// time of a memory-bound program on one core over its time on all the
    /// cores of one node (docs/simulator.md, "Memory bandwidth").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bandwidth: Option<f64>,
}

impl Default for MachineParams {
    fn default() -> Self {
        MachineParams {
            numa_factor: 2.0,
            noise: 0.05,
            core_migration_s: 250e-6,
            node_migration_s: 1e-3,
            balance_interval_s: 0.016,
            numa_balance_every: 4,
            core_imbalance_pct: 1.17,
            node_imbalance_pct: 1.25,
            rotate_after_s: Some(ROTATE_AFTER_S),
            round_jitter: ROUND_JITTER,
            metric: SimMetric::Cpu,
            load_session: LoadSession::Same,
            numa_balancing_s: None,
            thread_memory_move_s: THREAD_MEMORY_MOVE_S,
            memory_bandwidth: None,
        }
    }
}

/// How many times as long `spec`'s program takes alone on the idle cores of
/// `node_cores` (its workers spread evenly over the nodes, one per core at
/// most) as without a limit on memory bandwidth: 1 without one.
fn alone_memory_wait(spec: &WorkloadSpec, node_cores: &[Vec<usize>], bandwidth: Option<f64>) -> f64 {
    let m = spec.memory_intensity;
    let (Some(bandwidth), false) = (bandwidth, node_cores.is_empty() || m <= 0.0) else {
        return 1.0;
    };
    let cores: usize = node_cores.iter().map(Vec::len).sum();
    let busy = spec.workers().min(cores) as f64;
    let busiest = node_cores
        .iter()
        .map(|list| (busy / node_cores.len() as f64).ceil().min(list.len() as f64))
        .fold(0.0, f64::max);
    memory_wait_at(m, m * busiest / bandwidth)
}

/// How many times as long a thread of memory intensity `m` takes where its
/// node's memory accesses take `stretch` times as long: `(1 − m) + m ·
/// stretch`, exactly 1 where the node serves all it is asked for.
fn memory_wait_at(m: f64, stretch: f64) -> f64 {
    if stretch <= 1.0 { 1.0 } else { (1.0 - m) + m * stretch }
}

/// [`MachineParams::thread_memory_move_s`] by default: 100 MB of pages at
/// the 2 GB/s move_pages(2) reaches.
pub const THREAD_MEMORY_MOVE_S: f64 = 0.05;

/// What a thread accumulated since the last observation.
#[derive(Clone, Copy, Debug, Default)]
struct Accumulated {
    /// Seconds running (share × time while runnable).
    running_s: f64,
    /// Seconds runnable but waiting for the core.
    waiting_s: f64,
    /// Nominal core-seconds received (running × capacity).
    cpu_s: f64,
    /// Work done, core-seconds.
    work: f64,
    /// Instructions retired, in nominal core-seconds.
    instructions: f64,
    /// Seconds running, each weighted by the share of the thread's memory
    /// accesses that went to another node than its core's.
    remote_s: f64,
}

#[derive(Clone, Debug)]
struct SimThread {
    key: ThreadKey,
    weight: f64,
    memory_intensity: f64,
    /// Node holding the thread's memory: where it first did work (moved by
    /// NUMA balancing and memory binding).
    home: Option<usize>,
    /// The node the thread works on away from `home`, and its net
    /// CPU-seconds there (NUMA balancing's clock, [`numa_balancing`]).
    away: Option<(usize, f64)>,
    /// Where its memory accesses go: (thread whose data, share); its own
    /// only, except for workloads whose threads read each other's data.
    data: Vec<(usize, f64)>,
    /// Layout place the thread is allowed on.
    place: usize,
    core: usize,
    has_run: bool,
    /// CPU time still to pay for migrations (no progress meanwhile).
    stall_s: f64,
    /// How runnable the thread has been, averaged as Linux's load tracking
    /// does (PELT, a half-life of [`PELT_HALF_LIFE_S`]); it moves with the
    /// thread to another core, as the kernel moves a task's load average.
    runnable_avg: f64,
    acc: Accumulated,
}

/// Lifetime totals of the machine, for checks and reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MachineTotals {
    /// Core changes of all threads (engine placements and OS balancing).
    pub migrations: u64,
    /// Of those, node changes.
    pub node_migrations: u64,
    /// Moves made by the modelled OS balancer (periodic, newidle, wakeup).
    pub balancer_moves: u64,
    /// Threads whose memory moved to another node (NUMA balancing and
    /// memory binding).
    pub memory_moves: u64,
    /// Work done by all threads, core-seconds.
    pub work: f64,
}

/// A simulated machine running one program.
pub struct SimMachine {
    params: MachineParams,
    core_node: Vec<usize>,
    capacity: Vec<f64>,
    node_cores: Vec<Vec<usize>>,
    /// For every layout place, the cores it spans.
    place_cores: Vec<Vec<usize>>,
    /// `place_allows[place][core]`.
    place_allows: Vec<Vec<bool>>,
    /// The first CPU of every core (what a real kernel reports as the
    /// CPU a thread ran on).
    core_cpu: Vec<usize>,
    whole: usize,
    background: BackgroundSchedule,
    phase: Option<usize>,
    bg: Vec<f64>,
    program: Program,
    threads: Vec<SimThread>,
    /// Runnable weight of the program's threads per core (R_j).
    runnable: Vec<f64>,
    /// How much of [`WAKE_PREEMPT_SHARE`] the program's threads take where two
    /// or more of them live on a core beside another session's program: 0
    /// unless they sleep while they wait and the background is another
    /// session's, else `min(1, slice / grain)`, or all of it where the
    /// program's grain is not given (the papers' iterative programs wait
    /// every millisecond or less, as aco does). Fixed for the run.
    wake_preempts: f64,
    /// The spin a thread wastes each round where the program's workers
    /// share a core, over the work it does in a round (σ, 0 where no
    /// turns are modelled): where the program's grain is given and its
    /// threads spin while they wait, the workers of a core take turns at
    /// each round, and all but the last to arrive spin `min(spin, slice)`
    /// while the others wait for the core behind them ([`Self::turns`];
    /// it matters where the rounds are shorter than a slice, σ large).
    /// Fixed for the run.
    turn_spin: f64,
    /// The run time per sleep the manager reads of each worker (the
    /// voluntary switches of /proc/PID/task/TID/status): the program's
    /// grain where it sleeps while it waits, else none. Fixed for the run.
    grain_seen: Option<f64>,
    /// The program reports its progress ([`WorkloadSpec::heartbeats`]).
    heartbeats: bool,
    /// Linux's slice where the background runs in another session (the
    /// manager's scan of the other programs' groups), else `None`.
    wake_slice: Option<f64>,
    /// [`Self::advance_to`] stops as soon as threads are born: the program
    /// wakes up its bubbles then, and the manager places them before they
    /// compute (the in-process wake-up).
    wakes_up_births: bool,
    /// The program's live workers per core, runnable or asleep (counted
    /// only when `wake_preempts` or `turn_spin`; a main thread asleep in
    /// join never wakes).
    residents: Vec<u32>,
    /// Per node, how many times as long its memory's accesses take: the
    /// demand of the working threads whose memory is there over
    /// [`MachineParams::memory_bandwidth`], at least 1 (all 1 without a
    /// bandwidth). Updated with the loads.
    memory_stretch: Vec<f64>,
    /// Per queue of a pipeline (between stage s and s + 1), the share of
    /// their time its producers keep while all its consumers wait for
    /// another session's slices ([`queue_kept`]); empty unless the program
    /// is a pipeline, the background another session's and the grain given.
    /// Fixed for the run: [`Self::full_queue_stalls`] only checks where the
    /// consumers are.
    queue_kept: Vec<Option<f64>>,
    /// Per thread, the share of its time it is blocked on a full queue
    /// ([`Self::full_queue_stalls`]); 0 for every thread of other programs.
    queue_stall: Vec<f64>,
    /// Their sum over the cores (R).
    runnable_total: f64,
    /// Per core, the load average of the program's threads there (their
    /// weights times their `runnable_avg`): what its task group's weight
    /// is split by in its own session ([`Self::group_share`]).
    runnable_avg: Vec<f64>,
    /// The sum of `runnable_avg`.
    runnable_avg_total: f64,
    /// The balancer's load per core: the background's weight plus the
    /// program's (R_j in the same session, its group's share G·R_j/R in
    /// its own).
    load: Vec<f64>,
    now: f64,
    next_balance: f64,
    balance_ticks: u64,
    /// Per core: periodic balancing ticks in a row that found a busier
    /// core of its node and moved nothing ([`MachineParams::rotate_after_s`]).
    balance_failed: Vec<u32>,
    last_observe: Option<f64>,
    /// `totals.work` at the last observation, and the application's
    /// progress over the period it closed, as a live target reports it
    /// ([`SimMachine::progress_of`]): the work rate (core-seconds per
    /// second) where the program beats, else what the threads' CPU time
    /// shows.
    work_at_observe: f64,
    last_progress: Option<f64>,
    /// Share of the last period's CPU time not spent working (metric `useful`).
    last_waiting: Option<f64>,
    /// Share of the threads' runnable time queued for a core last period,
    /// while the program had less than all the cores ([`Target::queued`]).
    last_queued: Option<f64>,
    rng: ChaCha8Rng,
    /// The measurement noise of the threads' run shares, drawn apart from
    /// `rng` so that what the model does never depends on what is measured.
    share_rng: ChaCha8Rng,
    /// The noise of the CPU time worked, apart from the speeds' and the
    /// shares' (adding it left their draws as they were).
    worked_rng: ChaCha8Rng,
    completion: Option<f64>,
    /// Nominal core-seconds each core gave to application threads.
    app_cpu_s: Vec<f64>,
    /// Nominal core-seconds each core gave to the background program.
    background_cpu_s: Vec<f64>,
    /// The background's CPU-seconds at the last observation, and its share
    /// of the cores over the period it closed ([`Target::others_share`]).
    background_at_observe: f64,
    last_others: Option<f64>,
    /// The share of the threads' accesses to memory on other nodes than
    /// their cores', weighted by run time, over the last period observed;
    /// `None` on one node (nothing is remote there).
    last_remote: Option<f64>,
    /// The same per core, and each core's share by CPU number
    /// ([`Target::others_by_cpu`]).
    background_at_observe_by_core: Vec<f64>,
    last_others_by_cpu: Vec<Option<f64>>,
    totals: MachineTotals,
    last_samples: Vec<ThreadSample>,
    scratch_load: Vec<f64>,
}

impl SimMachine {
    /// A machine with the cores of `places` (capacity 1), running the
    /// program of `spec` (thread keys 1..=threads) under `background`.
    /// Every thread starts with the whole machine as its place, on the core
    /// Linux's fork balancing would pick (idlest node, then idlest core).
    pub fn new(
        places: &Places,
        spec: &WorkloadSpec,
        background: BackgroundSchedule,
        params: MachineParams,
        seed: u64,
    ) -> Self {
        let layout = &places.layout;
        let cores: Vec<usize> = layout.all_cores().collect();
        let core_index = |place: usize| cores.iter().position(|&c| c == place);
        let core_node: Vec<usize> = cores
            .iter()
            .map(|&p| layout.places()[p].node.expect("a core lies in a node"))
            .collect();
        let mut node_cores = vec![Vec::new(); layout.nodes()];
        for (core, &node) in core_node.iter().enumerate() {
            node_cores[node].push(core);
        }
        let place_cores: Vec<Vec<usize>> = layout
            .places()
            .iter()
            .enumerate()
            .map(|(index, spec)| match spec.kind {
                PlaceKind::Core => core_index(index).into_iter().collect(),
                PlaceKind::Node => node_cores[spec.node.expect("a node place has a node")].clone(),
                PlaceKind::Machine => (0..cores.len()).collect(),
                PlaceKind::Package | PlaceKind::Die | PlaceKind::L3 => (0..cores.len())
                    .filter(|&core| places.cpus[cores[core]].is_subset(&places.cpus[index]))
                    .collect(),
            })
            .collect();
        let core_cpu = cores
            .iter()
            .map(|&place| places.cpus[place].first().expect("a core has a CPU"))
            .collect();
        let place_allows = place_cores
            .iter()
            .map(|list| {
                let mut allows = vec![false; cores.len()];
                list.iter().for_each(|&c| allows[c] = true);
                allows
            })
            .collect();
        // The work is sized so that the program takes `duration_s` alone on
        // idle cores, where the nodes' memory bandwidth slows it too.
        let alone = alone_memory_wait(spec, &node_cores, params.memory_bandwidth);
        let mut program = WorkloadSpec {
            duration_s: spec.duration_s / alone,
            ..spec.clone()
        }
        .build(cores.len());
        program.vary_rounds(params.round_jitter, seed ^ 0x5eed_51a7_0000_0003);
        let m = cores.len();
        let slice = scheduler_slice_s(m);
        let wake_preempts = if params.load_session == LoadSession::Own && program.sleeps_while_waiting() {
            spec.grain_s
                .map_or(1.0, |grain| (slice / grain.max(f64::MIN_POSITIVE)).min(1.0))
        } else {
            0.0
        };
        let grain = spec.grain_s.filter(|g| g.is_finite() && *g > 0.0);
        // The real program's spin (the simulated one is scaled to the
        // simulated rounds).
        let turn_spin = match (grain, spec.kind) {
            (Some(grain), WorkloadKind::BarrierSpin) => spec.spin_s.unwrap_or(f64::INFINITY).min(slice) / grain,
            _ => 0.0,
        };
        // What the manager reads of the threads' rhythm and the others' group.
        let grain_seen = program.sleeps_while_waiting().then(|| grain.unwrap_or(UNGIVEN_GRAIN_S));
        let wake_slice = (params.load_session == LoadSession::Own).then_some(slice);
        let queue_kept = match (grain, program.stages()) {
            (Some(grain), Some(stages)) if params.load_session == LoadSession::Own => queue_kept(stages, grain, slice),
            _ => Vec::new(),
        };
        let mut machine = SimMachine {
            params,
            core_node,
            capacity: vec![1.0; m],
            node_cores,
            place_cores,
            place_allows,
            core_cpu,
            whole: layout.whole(),
            background,
            phase: None,
            bg: vec![0.0; m],
            program,
            threads: Vec::with_capacity(spec.tasks()),
            runnable: vec![0.0; m],
            wake_preempts,
            turn_spin,
            grain_seen,
            heartbeats: spec.heartbeats,
            wake_slice,
            queue_kept,
            queue_stall: vec![0.0; spec.tasks()],
            wakes_up_births: false,
            residents: vec![0; m],
            memory_stretch: vec![1.0; layout.nodes()],
            runnable_total: 0.0,
            runnable_avg: vec![0.0; m],
            runnable_avg_total: 0.0,
            load: vec![0.0; m],
            now: 0.0,
            next_balance: 0.0,
            balance_ticks: 0,
            balance_failed: vec![0; m],
            last_observe: None,
            work_at_observe: 0.0,
            last_progress: None,
            last_waiting: None,
            last_queued: None,
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_51a7_0000_0001),
            share_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_51a7_0000_0002),
            worked_rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_51a7_0000_0003),
            completion: None,
            app_cpu_s: vec![0.0; m],
            background_cpu_s: vec![0.0; m],
            background_at_observe: 0.0,
            last_others: None,
            last_remote: None,
            background_at_observe_by_core: vec![0.0; m],
            last_others_by_cpu: Vec::new(),
            totals: MachineTotals::default(),
            last_samples: Vec::new(),
            scratch_load: vec![0.0; m],
        };
        machine.apply_background_phase();
        let tasks = machine.program.tasks().len();
        // The main thread (nice 0) sleeps all along; a worker has its spec's weight.
        let weight_of = |index: usize| {
            if index < spec.workers() {
                spec.weight(index)
            } else {
                1.0
            }
        };
        // Fork balancing in creation order (key order: the main thread
        // first, running while it creates the workers).
        let mut placed = vec![0.0; m];
        let mut core_of = vec![0; tasks];
        for key in 1..=tasks as ThreadKey {
            let index = machine
                .program
                .index_of(key)
                .expect("every key up to the task count has a task");
            // A thread created later is placed when it is (place_newborn).
            if machine.program.tasks()[index].activity != Activity::Unborn {
                let core = machine.fork_core(&placed, weight_of(index));
                placed[core] += weight_of(index);
                core_of[index] = core;
            }
        }
        let mut data = spec.data_shares().into_iter();
        for (index, &core) in core_of.iter().enumerate() {
            let weight = weight_of(index);
            machine.threads.push(SimThread {
                key: machine.program.key_of(index),
                weight,
                memory_intensity: spec.memory_intensity,
                home: None,
                away: None,
                data: data.next().unwrap_or_else(|| vec![(index, 1.0)]),
                place: machine.whole,
                core,
                has_run: false,
                stall_s: 0.0,
                // A new task's load average starts as if always runnable.
                runnable_avg: 1.0,
                acc: Accumulated::default(),
            });
        }
        machine.next_balance = machine.params.balance_interval_s;
        if machine.program.complete() {
            machine.completion = Some(0.0);
        }
        machine
    }

    /// Sets the capacity of every core (1.0 = nominal), in core order.
    ///
    /// # Panics
    /// If the length differs from the number of cores or a capacity is not
    /// positive.
    pub fn set_capacities(&mut self, capacity: Vec<f64>) {
        assert_eq!(capacity.len(), self.capacity.len(), "one capacity per core");
        assert!(
            capacity.iter().all(|&c| c > 0.0 && c.is_finite()),
            "capacities must be positive"
        );
        self.capacity = capacity;
    }

    pub fn now(&self) -> f64 {
        self.now
    }

    /// When the last thread finished, if it has.
    pub fn completion(&self) -> Option<f64> {
        self.completion
    }

    pub fn program(&self) -> &Program {
        &self.program
    }

    pub fn cores(&self) -> usize {
        self.capacity.len()
    }

    pub fn totals(&self) -> &MachineTotals {
        &self.totals
    }

    /// Nominal core-seconds each core gave to the program and to the
    /// background so far.
    pub fn cpu_given(&self) -> (&[f64], &[f64]) {
        (&self.app_cpu_s, &self.background_cpu_s)
    }

    pub fn capacities(&self) -> &[f64] {
        &self.capacity
    }

    /// The samples of the last `observe`.
    pub fn last_samples(&self) -> &[ThreadSample] {
        &self.last_samples
    }

    /// The core (index in core order) of every thread, finished ones
    /// included (they keep their last core).
    pub fn thread_cores(&self) -> Vec<usize> {
        self.threads.iter().map(|t| t.core).collect()
    }

    /// Threads that have not finished.
    pub fn alive(&self) -> usize {
        self.program.tasks().iter().filter(|t| t.activity.exists()).count()
    }

    /// The node of a core.
    pub fn node_of(&self, core: usize) -> usize {
        self.core_node[core]
    }

    /// The node holding thread `index`'s memory, once it has worked.
    pub fn memory_node(&self, index: usize) -> Option<usize> {
        self.threads[index].home
    }

    /// Makes [`Self::advance_to`] stop when threads are born, before they
    /// run (a program that wakes up its bubbles after creating threads,
    /// `pinlearn_bubble_wake_up`: the manager places them at once).
    pub fn wake_up_births(&mut self) {
        self.wakes_up_births = true;
    }

    /// Runs the machine until `until_s` (or until the program completes,
    /// then `now` is the completion time). Returns true when it stopped
    /// earlier because threads were born (see [`Self::wake_up_births`]):
    /// call again to go on.
    pub fn advance_to(&mut self, until_s: f64) -> bool {
        loop {
            let born = self.handle_due_events();
            if self.completion.is_some() {
                return false;
            }
            if born && self.wakes_up_births {
                return true;
            }
            if self.now >= until_s - TIME_EPSILON {
                break;
            }
            self.step(until_s);
        }
        self.now = self.now.max(until_s);
        false
    }

    // ----- time stepping -------------------------------------------------

    fn apply_background_phase(&mut self) {
        let phase = self.background.phase_at(self.now + TIME_EPSILON);
        if phase != self.phase {
            self.phase = phase;
            match phase {
                Some(k) => {
                    let weights = &self.background.phases()[k].1;
                    for (core, bg) in self.bg.iter_mut().enumerate() {
                        *bg = weights.get(core).copied().unwrap_or(0.0);
                    }
                }
                None => self.bg.iter_mut().for_each(|b| *b = 0.0),
            }
        }
    }

    fn next_phase_start(&self) -> Option<f64> {
        let next = self.phase.map_or(0, |k| k + 1);
        self.background.phases().get(next).map(|(start, _)| *start)
    }

    fn recompute_loads(&mut self) {
        self.runnable.iter_mut().for_each(|r| *r = 0.0);
        self.residents.iter_mut().for_each(|r| *r = 0);
        let workers = self.program.workers();
        for (index, (thread, task)) in self.threads.iter().zip(self.program.tasks()).enumerate() {
            if (self.wake_preempts > 0.0 || self.turn_spin > 0.0) && task.activity.exists() && index < workers {
                self.residents[thread.core] += 1;
            }
        }
        for index in 0..self.threads.len() {
            if self.on_cpu(index) {
                self.runnable[self.threads[index].core] += self.threads[index].weight;
            }
        }
        self.runnable_total = self.runnable.iter().sum();
        self.runnable_avg.iter_mut().for_each(|a| *a = 0.0);
        for thread in &self.threads {
            self.runnable_avg[thread.core] += thread.weight * thread.runnable_avg;
        }
        self.runnable_avg_total = self.runnable_avg.iter().sum();
        let total = self.runnable_total;
        for core in 0..self.load.len() {
            self.load[core] = self.bg[core] + self.program_load(self.runnable[core], total);
        }
        self.full_queue_stalls();
        self.recompute_memory_stretch();
    }

    /// [`Self::memory_stretch`] from the threads working now: each asks
    /// its memory's node (where it has none yet, its core's) for its
    /// rate of work without the stretch times its memory intensity.
    fn recompute_memory_stretch(&mut self) {
        let Some(bandwidth) = self.params.memory_bandwidth else {
            return;
        };
        let mut demand = vec![0.0; self.memory_stretch.len()];
        for index in 0..self.threads.len() {
            let thread = &self.threads[index];
            if thread.memory_intensity <= 0.0
                || !self.on_cpu(index)
                || self.program.tasks()[index].activity != Activity::Work
            {
                continue;
            }
            let node = thread.home.unwrap_or(self.core_node[thread.core]);
            let rate = self.cpu_rate(index) * (1.0 - self.queue_stall[index])
                / (self.remote_slowdown(thread) * self.turns(thread));
            demand[node] += rate * thread.memory_intensity;
        }
        for (stretch, asked) in self.memory_stretch.iter_mut().zip(demand) {
            *stretch = (asked / bandwidth).max(1.0);
        }
    }

    /// Where every consumer of a pipeline's queue lives alone (among the
    /// program's workers) on a core beside another session's program, it
    /// gets the core only between that program's slices, and its producers,
    /// having filled the queue, are blocked for the rest of their time
    /// ([`queue_kept`]).
    fn full_queue_stalls(&mut self) {
        if self.queue_kept.is_empty() {
            return;
        }
        let Some(stages) = self.program.stages() else {
            return;
        };
        self.queue_stall.iter_mut().for_each(|stall| *stall = 0.0);
        let tasks = self.program.tasks();
        for (stage, kept) in self.queue_kept.iter().enumerate() {
            let Some(kept) = *kept else {
                continue;
            };
            let mut consumers = stages.threads[stage + 1]
                .iter()
                .filter(|&&j| tasks[j].activity.exists())
                .peekable();
            let all_wait = consumers.peek().is_some()
                && consumers.all(|&j| {
                    let core = self.threads[j].core;
                    self.bg[core] > 0.0 && self.residents[core] < 2
                });
            if all_wait {
                for &i in &stages.threads[stage] {
                    self.queue_stall[i] = 1.0 - kept;
                }
            }
        }
    }

    /// What runnable program weight `weight` on a core weighs in the
    /// balancer's eyes when the program has `total` runnable weight: itself
    /// in the background's session; in its own, its share of the program's
    /// group weight (Linux's `h_load`).
    fn program_load(&self, weight: f64, total: f64) -> f64 {
        match self.params.load_session {
            LoadSession::Same => weight,
            LoadSession::Own if total > 0.0 => PROGRAM_GROUP_WEIGHT * weight / total,
            LoadSession::Own => 0.0,
        }
    }

    /// The share of `core` the program's threads get together (the rest
    /// goes to the background): by weight, except that two or more threads
    /// that sleep while they wait take up to [`WAKE_PREEMPT_SHARE`] of a core
    /// from another session's program by preempting it at every wake-up
    /// (`wake_preempts` of the way there).
    fn program_fraction(&self, core: usize) -> f64 {
        let program = self.group_share(core);
        let whole = program + self.bg[core];
        let by_weight = if whole > 0.0 { program / whole } else { 0.0 };
        let residents = self.residents[core];
        if program > 0.0 && residents >= 2 {
            let preempts = self.wake_preempts * self.spinners_preempt(residents);
            by_weight + (by_weight.max(WAKE_PREEMPT_SHARE) - by_weight) * preempts
        } else {
            by_weight
        }
    }

    /// The program's task group's weight on `core` as Linux's fair-group
    /// scheduling computes it (`calc_group_shares`): in its own session the
    /// group weight split by each core's load average, the core's own
    /// counted at least at its runnable weight now; in the background's,
    /// the runnable weight itself.
    fn group_share(&self, core: usize) -> f64 {
        match self.params.load_session {
            LoadSession::Same => self.runnable[core],
            LoadSession::Own => {
                let here = self.runnable[core].max(self.runnable_avg[core]);
                let all = self.runnable_avg_total - self.runnable_avg[core] + here;
                if all > 0.0 {
                    PROGRAM_GROUP_WEIGHT * here / all
                } else {
                    0.0
                }
            }
        }
    }

    /// Whether thread `index` takes CPU time now: runnable, except a
    /// spinning waiter among the workers of a core that take turns there
    /// ([`Self::turns`] charges its spin to the round; it holds the core
    /// while the others wait behind it, which the fluid shares do not
    /// show). A spinner alone among them on its core spins as it would.
    fn on_cpu(&self, index: usize) -> bool {
        let activity = self.program.tasks()[index].activity;
        activity.runnable()
            && !(self.turn_spin > 0.0
                && matches!(activity, Activity::Spin { .. })
                && self.residents[self.threads[index].core] >= 2)
    }

    /// How much of their wake-up preemption `k` >= 2 workers that take turns
    /// on a core keep when they spin before they sleep ([`Self::turn_spin`]
    /// σ > 0; 1 for programs that do not): all of it where each one's spin is
    /// at most the work of the `k - 1` it waits for (σ <= k - 1), none where
    /// it is twice that or more, in between in proportion. Measured
    /// (docs/simulator.md, "Turns on a shared core"): `aco --sync
    /// spin-then-block` pinned beside another session's loop, 2 threads a
    /// CPU (rounds of 0.12 ms of work each) left the loop 0.07, 0.38, 0.54,
    /// 0.58 and 0.61 of its CPU with spins of 50, 100, 200, 400 and 800 us;
    /// 4 a CPU (0.06 ms each) 0.04, 0.01, 0.05, 0.52 and 0.56 (a first
    /// run; the second, logged, within 0.04 but at 100 us: 0.23).
    fn spinners_preempt(&self, k: u32) -> f64 {
        if self.turn_spin > 0.0 && k >= 2 {
            (2.0 - self.turn_spin / f64::from(k - 1)).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }

    /// Nominal core-seconds per second thread `index` (runnable) receives.
    fn cpu_rate(&self, index: usize) -> f64 {
        let thread = &self.threads[index];
        let runnable = self.runnable[thread.core];
        if runnable <= 0.0 {
            return 0.0;
        }
        thread.weight / runnable * self.program_fraction(thread.core) * self.capacity[thread.core]
    }

    /// How many times a thread's work is slower than its CPU time: remote
    /// memory, the spins of turns on a shared core, and a node's memory
    /// bandwidth.
    fn slowdown(&self, thread: &SimThread) -> f64 {
        self.remote_slowdown(thread) * self.turns(thread) * self.memory_wait(thread)
    }

    /// How many times a thread's work is slower where its memory's node
    /// serves less than its threads ask: `(1 − m) + m · stretch` (1 without
    /// a bandwidth).
    fn memory_wait(&self, thread: &SimThread) -> f64 {
        let node = thread.home.unwrap_or(self.core_node[thread.core]);
        memory_wait_at(thread.memory_intensity, self.memory_stretch[node])
    }

    /// How many times a thread's work is slower than its CPU time where
    /// `k` >= 2 workers of a program with turns ([`Self::turn_spin`] σ > 0)
    /// share its core: [`turns_slowdown`] (1 elsewhere), the core doing
    /// `k w` of work in `k w + (k - 1) σ w`. What this costs Linux beside
    /// another session's load, measured: `aco --sync spin-then-block`
    /// (spin 0.2 ms, rounds of 0.1-0.2 ms) with all its threads on the free
    /// CPU took 2.2, 2.5 and 2.9 times as long as on both CPUs with 8, 4
    /// and 2 threads, where the fluid share alone gives 2.0.
    fn turns(&self, thread: &SimThread) -> f64 {
        let k = self.residents[thread.core];
        if self.turn_spin > 0.0 && k >= 2 {
            turns_slowdown(k as usize, self.turn_spin)
        } else {
            1.0
        }
    }

    /// 1 + (F − 1) · m · [`Self::remote_share`].
    fn remote_slowdown(&self, thread: &SimThread) -> f64 {
        1.0 + (self.params.numa_factor - 1.0).max(0.0) * thread.memory_intensity * self.remote_share(thread)
    }

    /// The share of the thread's accesses to data homed on another node
    /// than its core's (data not yet touched counts as local).
    fn remote_share(&self, thread: &SimThread) -> f64 {
        let node = self.core_node[thread.core];
        thread
            .data
            .iter()
            .filter(|&&(owner, _)| self.threads[owner].home.is_some_and(|home| home != node))
            .map(|&(_, share)| share)
            .sum()
    }

    /// Settles what is due now; true when threads were born.
    fn handle_due_events(&mut self) -> bool {
        if self.completion.is_some() {
            return false;
        }
        self.apply_background_phase();
        self.recompute_loads();
        self.scratch_load.copy_from_slice(&self.load);
        let mut woken = Vec::new();
        self.program.settle(self.now + TIME_EPSILON, &mut woken);
        if self.program.complete() {
            self.completion = Some(self.now);
            return false;
        }
        let born = self.program.take_born();
        for &index in &born {
            self.place_newborn(index);
        }
        self.recompute_loads();
        let any_wide = self.threads.iter().any(|t| self.place_cores[t.place].len() > 1);
        if any_wide {
            for index in woken {
                self.place_on_wakeup(index);
            }
            for core in 0..self.cores() {
                if self.load[core] <= TIME_EPSILON && self.scratch_load[core] > TIME_EPSILON {
                    self.pull_to_idle(core);
                }
            }
        }
        if self.now + TIME_EPSILON >= self.next_balance {
            if any_wide {
                self.balance();
            }
            self.balance_ticks += 1;
            while self.next_balance <= self.now + TIME_EPSILON {
                self.next_balance += self.params.balance_interval_s;
            }
        }
        !born.is_empty()
    }

    /// Integrates one interval of constant rates, ending at the next event
    /// or at `until_s`.
    fn step(&mut self, until_s: f64) {
        self.recompute_loads();
        let mut h = until_s - self.now;
        if let Some(start) = self.next_phase_start() {
            h = h.min(start - self.now);
        }
        h = h.min(self.next_balance - self.now);
        for (index, thread) in self.threads.iter().enumerate() {
            let task = self.program.tasks()[index];
            if let Activity::Spin { until } = task.activity {
                h = h.min(until - self.now);
            }
            if !self.on_cpu(index) {
                continue;
            }
            let cpu_rate = self.cpu_rate(index);
            if thread.stall_s > 0.0 {
                h = h.min(thread.stall_s / cpu_rate);
            } else if task.activity == Activity::Work {
                h = h.min(task.remaining / (cpu_rate / self.slowdown(thread)));
            }
        }
        let h = h.max(TIME_EPSILON);

        for core in 0..self.cores() {
            if self.bg[core] > 0.0 {
                self.background_cpu_s[core] += (1.0 - self.program_fraction(core)) * self.capacity[core] * h;
            }
        }
        for index in 0..self.threads.len() {
            let activity = self.program.tasks()[index].activity;
            if !self.on_cpu(index) {
                continue;
            }
            let core = self.threads[index].core;
            let node = self.core_node[core];
            let share = self.cpu_rate(index) / self.capacity[core];
            // A producer blocked on a full queue part of the time is
            // runnable for the rest only.
            let h = h * (1.0 - self.queue_stall[index]);
            let mut cpu = share * self.capacity[core] * h;
            self.app_cpu_s[core] += cpu;
            let remote = self.remote_share(&self.threads[index]);
            let slowdown = {
                let thread = &mut self.threads[index];
                if activity == Activity::Work {
                    match (thread.home, self.params.numa_balancing_s) {
                        (None, _) => thread.home = Some(node),
                        (Some(home), Some(after)) => {
                            thread.away = numa_balancing(thread.away, home, node, share * h);
                            if thread.away.is_some_and(|(_, worked)| worked >= after - TIME_EPSILON) {
                                thread.home = thread.away.take().map(|(node, _)| node);
                                self.totals.memory_moves += 1;
                            }
                        }
                        (Some(_), None) => {}
                    }
                }
                thread.has_run = true;
                thread.acc.running_s += share * h;
                thread.acc.remote_s += share * h * remote;
                thread.acc.waiting_s += (1.0 - share) * h;
                thread.acc.cpu_s += cpu;
                if thread.stall_s > 0.0 {
                    let paid = thread.stall_s.min(cpu);
                    thread.stall_s -= paid;
                    if thread.stall_s <= WORK_EPSILON {
                        thread.stall_s = 0.0;
                    }
                    thread.acc.instructions += paid;
                    cpu -= paid;
                }
                self.slowdown(&self.threads[index])
            };
            match activity {
                Activity::Work if cpu > 0.0 => {
                    let work = cpu / slowdown;
                    self.program.progress(index, work);
                    // The spins of its turns run instructions too.
                    let instructions = work * self.turns(&self.threads[index]);
                    let thread = &mut self.threads[index];
                    thread.acc.work += work;
                    thread.acc.instructions += instructions;
                    self.totals.work += work;
                }
                Activity::Spin { .. } => self.threads[index].acc.instructions += cpu,
                _ => {}
            }
        }
        let decay = (-h * std::f64::consts::LN_2 / PELT_HALF_LIFE_S).exp();
        for index in 0..self.threads.len() {
            let now = if self.on_cpu(index) { 1.0 } else { 0.0 };
            let thread = &mut self.threads[index];
            thread.runnable_avg = now + (thread.runnable_avg - now) * decay;
        }
        self.now += h;
    }

    // ----- the modelled OS ------------------------------------------------

    /// Fork placement of a thread of `weight` when `placed` is the program's
    /// weight per core so far: the node with the lowest load per capacity,
    /// then its idlest core (ties: lowest index), loads as the balancer sees
    /// them.
    fn fork_core(&self, placed: &[f64], weight: f64) -> usize {
        let total: f64 = placed.iter().sum::<f64>() + weight;
        let placed: Vec<f64> = placed
            .iter()
            .zip(&self.bg)
            .map(|(&p, &b)| b + self.program_load(p, total))
            .collect();
        self.least_loaded_core(&self.place_cores[self.whole], &placed)
    }

    /// Fork balancing among the cores `allowed` (in core order) with
    /// balancer loads `load`: the node with the lowest load per capacity
    /// over its allowed cores, then its idlest allowed core (ties: lowest
    /// index).
    fn least_loaded_core(&self, allowed: &[usize], load: &[f64]) -> usize {
        let in_node = |node: usize| allowed.iter().copied().filter(move |&c| self.core_node[c] == node);
        let node_load = |node: usize| {
            let load: f64 = in_node(node).map(|c| load[c]).sum();
            let capacity: f64 = in_node(node).map(|c| self.capacity[c]).sum();
            load / capacity
        };
        let mut nodes: Vec<usize> = allowed.iter().map(|&c| self.core_node[c]).collect();
        nodes.sort_unstable();
        nodes.dedup();
        let node = nodes
            .into_iter()
            .min_by(|&a, &b| node_load(a).total_cmp(&node_load(b)).then(a.cmp(&b)))
            .unwrap_or(0);
        self.idlest(&in_node(node).collect::<Vec<_>>(), load)
    }

    /// A thread just created: it inherits its creator's mask (place), and
    /// fork balancing puts it on the least loaded node of that place, then
    /// on the node's idlest core, loads as the balancer sees them without it.
    fn place_newborn(&mut self, index: usize) {
        let place = self
            .program
            .creator(index)
            .map_or(self.whole, |creator| self.threads[creator].place);
        self.recompute_loads();
        let mut load = self.load.clone();
        let weight = self.threads[index].weight;
        load[self.threads[index].core] -= self.program_load(weight, self.runnable_total);
        let core = self.least_loaded_core(&self.place_cores[place], &load);
        let thread = &mut self.threads[index];
        thread.place = place;
        thread.core = core;
    }

    fn idlest(&self, cores: &[usize], load: &[f64]) -> usize {
        cores
            .iter()
            .copied()
            .min_by(|&a, &b| {
                (load[a] / self.capacity[a])
                    .total_cmp(&(load[b] / self.capacity[b]))
                    .then(a.cmp(&b))
            })
            .unwrap_or(0)
    }

    /// Moves a thread to another core, charging the migration cost once it
    /// has run.
    fn migrate(&mut self, index: usize, to: usize) {
        let runnable = self.on_cpu(index);
        let from = self.threads[index].core;
        if from == to {
            return;
        }
        if runnable {
            let weight = self.threads[index].weight;
            let moved = self.program_load(weight, self.runnable_total);
            self.runnable[from] -= weight;
            self.runnable[to] += weight;
            self.load[from] -= moved;
            self.load[to] += moved;
        }
        let thread = &mut self.threads[index];
        let node_change = self.core_node[from] != self.core_node[to];
        if thread.has_run {
            thread.stall_s += if node_change {
                self.params.node_migration_s
            } else {
                self.params.core_migration_s
            };
        }
        thread.core = to;
        self.totals.migrations += 1;
        if node_change {
            self.totals.node_migrations += 1;
        }
    }

    /// A placement from the engine: keep the core if the place allows it,
    /// else the place's idlest core.
    fn set_place(&mut self, index: usize, place: usize) {
        self.threads[index].place = place;
        let core = self.threads[index].core;
        if self.place_allows[place][core] {
            return;
        }
        self.recompute_loads();
        let to = self.idlest(&self.place_cores[place].clone(), &self.load.clone());
        self.migrate(index, to);
    }

    /// select_idle_sibling: a woken thread stays on its core if that core is
    /// idle, else takes the first idle core of the same node it may use
    /// (scanning from its core on), else stays.
    fn place_on_wakeup(&mut self, index: usize) {
        let thread = &self.threads[index];
        let place = thread.place;
        let prev = thread.core;
        if self.place_cores[place].len() <= 1 {
            return;
        }
        if !self.place_allows[place][prev] {
            let to = self.idlest(&self.place_cores[place].clone(), &self.load.clone());
            self.migrate(index, to);
            self.totals.balancer_moves += 1;
            return;
        }
        if self.load[prev] - self.program_load(thread.weight, self.runnable_total) <= TIME_EPSILON {
            return;
        }
        let siblings = &self.node_cores[self.core_node[prev]];
        let start = siblings.iter().position(|&c| c == prev).unwrap_or(0);
        let idle = (1..siblings.len())
            .map(|k| siblings[(start + k) % siblings.len()])
            .find(|&c| self.place_allows[place][c] && self.load[c] <= TIME_EPSILON);
        if let Some(to) = idle {
            self.migrate(index, to);
            self.totals.balancer_moves += 1;
        }
    }

    /// Newidle balancing: a core that just went idle pulls one runnable
    /// thread from the busiest core of its node that can spare one.
    fn pull_to_idle(&mut self, core: usize) {
        let mut sources: Vec<usize> = self.node_cores[self.core_node[core]]
            .iter()
            .copied()
            .filter(|&c| c != core && self.load[c] > TIME_EPSILON)
            .collect();
        self.sort_busiest_first(&mut sources);
        for source in sources {
            if self.try_move(source, core, 1.0, false) {
                return;
            }
        }
    }

    /// Periodic balancing: within every node, the least loaded cores pull
    /// one thread each from the busiest; across nodes, every
    /// `numa_balance_every` ticks, one thread moves from the busiest node to
    /// the least loaded one.
    fn balance(&mut self) {
        self.recompute_loads();
        let rotate_after = self.params.rotate_after_s.map_or(u32::MAX, |after| {
            (after / self.params.balance_interval_s).ceil().max(1.0) as u32
        });
        for node in 0..self.node_cores.len() {
            let mut pullers = self.node_cores[node].clone();
            pullers.sort_by(|&a, &b| {
                (self.load[a] / self.capacity[a])
                    .total_cmp(&(self.load[b] / self.capacity[b]))
                    .then(a.cmp(&b))
            });
            for dst in pullers {
                let mut sources: Vec<usize> = self.node_cores[node].iter().copied().filter(|&c| c != dst).collect();
                self.sort_busiest_first(&mut sources);
                let pct = self.params.core_imbalance_pct;
                let busier = sources.iter().any(|&src| self.busier(src, dst, pct));
                let rotate = self.balance_failed[dst] >= rotate_after;
                if sources.into_iter().any(|src| self.try_move(src, dst, pct, rotate)) {
                    self.balance_failed[dst] = 0;
                } else {
                    self.balance_failed[dst] = if busier { self.balance_failed[dst] + 1 } else { 0 };
                    break;
                }
            }
        }
        let nodes = self.node_cores.len();
        let every = u64::from(self.params.numa_balance_every.max(1));
        if nodes > 1 && self.balance_ticks.is_multiple_of(every) {
            let node_load = |machine: &Self, node: usize| {
                let cores = &machine.node_cores[node];
                let load: f64 = cores.iter().map(|&c| machine.load[c]).sum();
                let capacity: f64 = cores.iter().map(|&c| machine.capacity[c]).sum();
                load / capacity
            };
            let busiest = (0..nodes)
                .max_by(|&a, &b| node_load(self, a).total_cmp(&node_load(self, b)).then(b.cmp(&a)))
                .unwrap_or(0);
            let idlest = (0..nodes)
                .min_by(|&a, &b| node_load(self, a).total_cmp(&node_load(self, b)).then(a.cmp(&b)))
                .unwrap_or(0);
            if busiest != idlest && node_load(self, busiest) > self.params.node_imbalance_pct * node_load(self, idlest)
            {
                let dst = self.idlest(&self.node_cores[idlest].clone(), &self.load.clone());
                let mut sources = self.node_cores[busiest].clone();
                self.sort_busiest_first(&mut sources);
                let pct = self.params.node_imbalance_pct;
                for src in sources {
                    if self.try_move(src, dst, pct, false) {
                        break;
                    }
                }
            }
        }
    }

    fn sort_busiest_first(&self, cores: &mut [usize]) {
        cores.sort_by(|&a, &b| {
            (self.load[b] / self.capacity[b])
                .total_cmp(&(self.load[a] / self.capacity[a]))
                .then(a.cmp(&b))
        });
    }

    /// Whether core `src` is loaded at all and more than `pct` times as
    /// much as `dst` (per unit of capacity): what a balancer move asks.
    fn busier(&self, src: usize, dst: usize, pct: f64) -> bool {
        let src_load = self.load[src] / self.capacity[src];
        src_load > 0.0 && src_load > pct * (self.load[dst] / self.capacity[dst])
    }

    /// Moves one runnable thread from `src` to `dst` if `src`'s load exceeds
    /// `pct` times `dst`'s and the move strictly lowers the pair's maximum
    /// (the thread's weight is less than the difference), or, with
    /// `rotate`, does not raise it (the two loads swap). The thread is
    /// drawn at random among those allowed on `dst`; memory placement and
    /// spinning are ignored. Returns whether a thread moved.
    fn try_move(&mut self, src: usize, dst: usize, pct: f64, rotate: bool) -> bool {
        if !self.busier(src, dst, pct) {
            return false;
        }
        let src_load = self.load[src] / self.capacity[src];
        let candidates: Vec<usize> = self
            .threads
            .iter()
            .enumerate()
            .filter(|(index, t)| {
                t.core == src
                    && self.on_cpu(*index)
                    && self.place_cores[t.place].len() > 1
                    && self.place_allows[t.place][dst]
                    && {
                        let after =
                            (self.load[dst] + self.program_load(t.weight, self.runnable_total)) / self.capacity[dst];
                        if rotate {
                            after <= src_load * (1.0 + TIME_EPSILON)
                        } else {
                            after < src_load * (1.0 - TIME_EPSILON)
                        }
                    }
            })
            .map(|(index, _)| index)
            .collect();
        if candidates.is_empty() {
            return false;
        }
        let chosen = candidates[self.rng.random_range(0..candidates.len())];
        self.migrate(chosen, dst);
        self.totals.balancer_moves += 1;
        true
    }

    // ----- measurement -----------------------------------------------------

    fn noisy(&mut self, value: f64) -> f64 {
        noisy(&mut self.rng, self.params.noise, value)
    }

    /// The share of its runnable time a thread ran (the schedstat ratio),
    /// `None` when it was hardly runnable.
    fn run_share(acc: &Accumulated, elapsed: f64) -> Option<f64> {
        let runnable = acc.running_s + acc.waiting_s;
        (runnable >= MIN_RUNNABLE_SHARE * elapsed && runnable > 0.0).then(|| acc.cpu_s / runnable)
    }

    /// CPU-seconds spent working (not spinning, not paying a migration), as
    /// far as the metric tells: all of the CPU time with `cpu`, which does
    /// not sample the code a thread runs.
    fn worked(&self, acc: &Accumulated) -> f64 {
        if self.params.metric != SimMetric::Cpu && acc.instructions > 0.0 {
            acc.cpu_s * (acc.work / acc.instructions).min(1.0)
        } else {
            acc.cpu_s
        }
    }

    /// The application's progress as a live target reports it
    /// (`live::LiveProcess`): the work done per second (`work_rate`) where
    /// the program beats ([`WorkloadSpec::heartbeats`], or the `heartbeat`
    /// metric); else the threads' summed speeds with the `instructions`
    /// metric (counters), and otherwise the CPU time they got in working
    /// code (`useful`; all of it with `cpu`): blind, as on a real machine,
    /// to time stalled on remote memory and to a barrier's stragglers.
    fn progress_of(&self, work_rate: f64, samples: &[ThreadSample]) -> f64 {
        if self.heartbeats || self.params.metric == SimMetric::Heartbeat {
            return work_rate;
        }
        match self.params.metric {
            SimMetric::Instructions => samples.iter().filter_map(|s| s.speed).sum(),
            _ => samples.iter().filter_map(|s| s.worked).sum(),
        }
    }

    fn speed_of(&self, acc: &Accumulated, elapsed: f64) -> Option<f64> {
        let run_share = Self::run_share(acc, elapsed);
        match self.params.metric {
            SimMetric::Cpu => run_share,
            SimMetric::Heartbeat => Some(acc.work / elapsed),
            SimMetric::Instructions => Some(acc.instructions / elapsed),
            SimMetric::Useful => run_share.map(|share| {
                let work_share = if acc.instructions > 0.0 {
                    (acc.work / acc.instructions).min(1.0)
                } else {
                    1.0
                };
                share * work_share
            }),
        }
    }
}

/// NUMA balancing's clock of a thread whose memory is on `home`, after it
/// worked `worked` CPU-seconds on `node`: the node it works on away from
/// its memory and its net CPU time there. Time on that node adds; time
/// anywhere else (at home, or on a third node) takes away, so a short
/// excursion delays the move without starting it over, as the kernel's
/// decaying fault counts do. A third node takes over once the count is
/// spent.
fn numa_balancing(away: Option<(usize, f64)>, home: usize, node: usize, worked: f64) -> Option<(usize, f64)> {
    match away {
        Some((away, total)) if away == node => Some((away, total + worked)),
        Some((away, total)) if total > worked => Some((away, total - worked)),
        Some((_, total)) if node != home => Some((node, worked - total)),
        None if node != home => Some((node, worked)),
        _ => None,
    }
}

/// `value` with multiplicative Gaussian noise of standard deviation `noise`
/// (never below 0).
fn noisy(rng: &mut ChaCha8Rng, noise: f64, value: f64) -> f64 {
    if noise <= 0.0 {
        return value;
    }
    // Box-Muller: one standard normal draw from two uniforms.
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random();
    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    value * (1.0 + noise * z).max(0.0)
}

impl Target for SimMachine {
    fn observe(&mut self, samples: &mut Vec<ThreadSample>) -> Result<(), EngineError> {
        let elapsed = self.last_observe.map(|t| self.now - t).filter(|&e| e > 0.0);
        self.last_observe = Some(self.now);
        let work_rate = elapsed.map(|e| (self.totals.work - self.work_at_observe) / e);
        self.work_at_observe = self.totals.work;
        let (mut work, mut instructions, mut ran, mut queued, mut remote) = (0.0, 0.0, 0.0, 0.0, 0.0);
        // In key order (the main thread, when there is one, comes first).
        for key in 1..=self.threads.len() as ThreadKey {
            let index = self
                .program
                .index_of(key)
                .expect("every key up to the task count has a task");
            if !self.program.tasks()[index].activity.exists() {
                continue;
            }
            let acc = std::mem::take(&mut self.threads[index].acc);
            work += acc.work;
            instructions += acc.instructions;
            ran += acc.running_s;
            queued += acc.waiting_s;
            remote += acc.remote_s;
            let speed = elapsed.and_then(|e| self.speed_of(&acc, e)).map(|s| self.noisy(s));
            let share = elapsed
                .and_then(|e| Self::run_share(&acc, e))
                .map(|s| noisy(&mut self.share_rng, self.params.noise, s).min(1.0));
            samples.push(ThreadSample {
                key: self.threads[index].key,
                speed,
                share,
                grain_s: self.grain_seen.filter(|_| index < self.program.workers()),
                worked: elapsed.map(|e| {
                    let worked = self.worked(&acc) / e;
                    noisy(&mut self.worked_rng, self.params.noise, worked)
                }),
            });
        }
        self.last_progress = work_rate.map(|rate| self.progress_of(rate, samples));
        self.last_samples.clone_from(samples);
        // What samples of waiting code would show: the CPU time not spent working.
        self.last_waiting = (self.params.metric == SimMetric::Useful && instructions > 0.0)
            .then(|| (1.0 - work / instructions).clamp(0.0, 1.0));
        self.last_remote = (self.node_cores.len() > 1 && ran > 0.0).then(|| remote / ran);
        self.last_queued = elapsed.and_then(|e| pinlearn_engine::queued_share(ran, queued, self.cores() as f64 * e));
        let background: f64 = self.background_cpu_s.iter().sum();
        self.last_others = elapsed.map(|e| (background - self.background_at_observe) / (self.cores() as f64 * e));
        self.background_at_observe = background;
        self.last_others_by_cpu.clear();
        if let Some(e) = elapsed {
            let size = self.core_cpu.iter().max().map_or(0, |&cpu| cpu + 1);
            self.last_others_by_cpu.resize(size, None);
            for (core, (&now, before)) in self
                .background_cpu_s
                .iter()
                .zip(&mut self.background_at_observe_by_core)
                .enumerate()
            {
                self.last_others_by_cpu[self.core_cpu[core]] = Some((now - *before) / e);
                *before = now;
            }
        } else {
            self.background_at_observe_by_core.clone_from(&self.background_cpu_s);
        }
        Ok(())
    }

    fn waiting(&self) -> Option<f64> {
        self.last_waiting
    }

    fn queued(&self) -> Option<f64> {
        self.last_queued
    }

    fn others_share(&self) -> Option<f64> {
        self.last_others
    }

    fn remote(&self) -> Option<f64> {
        self.last_remote
    }

    fn others_by_cpu(&self) -> Option<&[Option<f64>]> {
        (!self.last_others_by_cpu.is_empty()).then_some(&self.last_others_by_cpu[..])
    }

    fn wake_slice(&self) -> Option<f64> {
        self.wake_slice
    }

    fn place(&mut self, key: ThreadKey, place: usize, _cpus: &CpuSet) -> Result<bool, EngineError> {
        let Some(index) = self.program.index_of(key) else {
            return Ok(false);
        };
        if !self.program.tasks()[index].activity.exists() {
            return Ok(false);
        }
        if place >= self.place_cores.len() {
            return Err(EngineError::bad_input(format!(
                "place {place} does not exist on the simulated machine ({} places)",
                self.place_cores.len()
            )));
        }
        self.set_place(index, place);
        Ok(true)
    }

    fn initial_place(&self, _key: ThreadKey) -> Option<usize> {
        Some(self.whole)
    }

    /// The simulated program is one process ([`PROCESS_ID`]): all the memory its
    /// threads have touched moves to `node`, as migrate_pages(2) moves a
    /// live process's pages; memory touched later is first-touched.
    fn bind_memory(&mut self, pid: u32, node: usize) -> Result<bool, EngineError> {
        if pid != PROCESS_ID || node >= self.node_cores.len() {
            return Ok(false);
        }
        for thread in &mut self.threads {
            if thread.home.is_some_and(|home| home != node) {
                thread.home = Some(node);
                thread.away = None;
                self.totals.memory_moves += 1;
            }
        }
        Ok(true)
    }

    /// The memory thread `key` first touched moves to `node`, as
    /// move_pages(2) moves a live thread's sampled pages; the thread loses
    /// [`MachineParams::thread_memory_move_s`] of CPU time meanwhile.
    fn move_thread_memory(&mut self, key: ThreadKey, node: usize) -> Result<bool, EngineError> {
        let Some(index) = self.program.index_of(key) else {
            return Ok(false);
        };
        let Some(thread) = self.threads.get_mut(index) else {
            return Ok(false);
        };
        if node >= self.node_cores.len() || thread.home.is_none_or(|home| home == node) {
            return Ok(false);
        }
        thread.home = Some(node);
        thread.away = None;
        thread.stall_s += self.params.thread_memory_move_s;
        self.totals.memory_moves += 1;
        Ok(true)
    }

    fn last_cpu(&mut self, key: ThreadKey) -> Option<usize> {
        let index = self.program.index_of(key)?;
        self.threads.get(index).map(|thread| self.core_cpu[thread.core])
    }

    fn progress(&self) -> Option<f64> {
        self.last_progress
    }

    fn info(&self, key: ThreadKey) -> ThreadInfo {
        ThreadInfo {
            pid: PROCESS_ID,
            tid: key as u32,
            name: format!("sim-{}", key.saturating_sub(1)),
            ppid: 0,
        }
    }
}
