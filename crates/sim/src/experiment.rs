//! One simulated run: a scenario, a scheduler and a seed, driven through the
//! unchanged engine in simulated time, and what it measured.
//!
//! ```text
//!   Experiment (machine topology, workload, model, engine settings)
//!     │ prepare(scenario): cores of the scenario ─► restricted Topology ─► Places
//!     │                    background schedule, load game, best static assignment
//!     ▼
//!   run(prepared, scheduler, seed):
//!     policy = os | static | best-static (FixedPolicy) | learn[:objective] | bubbles | bubbles+learn
//!              (@metric: what the machine measures)
//!     Engine::new(policy, places, numa_every, trace: run_traced only)
//!     k = 0, 1, ...:  engine.step(machine, k·T_CPU)      observe + decide + place
//!                     record speeds, the core of every thread
//!                     machine.advance_to((k+1)·T_CPU)    until the program completes
//!                       (fib with bubbles: stops when threads are born, and
//!                        engine.step places them at once, the wake-up)
//!     ▼
//!   RunRecord (completion, mean speed, makespan vs optimum, Nash, ...) + speed series
//! ```

use std::collections::{HashMap, VecDeque};

use pinlearn_engine::bubbles::BubbleRules;
use pinlearn_engine::{Engine, Places, PolicyChoice, Settings, Trace};
use pinlearn_experiment::{Load, ModelRecord, RunRecord, Scenario, Scheduler, SchedulerKind};
use pinlearn_policy::{BubbleSet, BubbleSpec, LearnConfig, OsPolicy, Policy, StaticPolicy, ThreadKey};
use pinlearn_topology::{CpuSet, Topology};

use crate::SimError;
use crate::background::BackgroundSchedule;
use crate::game::{FixedPolicy, LoadGame, Optimum};
use crate::machine::{MachineParams, SimMachine, SimMetric};
use crate::workload::{WorkloadKind, WorkloadSpec};

/// `fib`'s bubbles: inner thread i (machine key i + 1) declares bubble
/// `fib{i}` for its two children, nested in the bubble it is in itself,
/// and load 0 for itself (it only waits for them, in join), as `pinlearn
/// work fib --mode bubbles` does before waking the bubble up.
fn fib_bubbles(leaves: usize) -> BubbleRules {
    let tree = crate::workload::fib_tree(leaves);
    let inner: Vec<usize> = (0..tree.len()).filter(|&i| tree[i].children.is_some()).collect();
    let specs = inner
        .iter()
        .map(|&i| {
            let spec = BubbleSpec::new(format!("fib{i}"));
            match tree[i].parent {
                Some(parent) => spec.within(format!("fib{parent}")),
                None => spec,
            }
        })
        .collect();
    let set = BubbleSet::new(specs).expect("a tree: distinct names, parents declared first");
    let members = inner
        .iter()
        .map(|&i| {
            tree[i]
                .children
                .map_or_else(Vec::new, |c| c.iter().map(|&k| k as u32 + 1).collect())
        })
        .collect();
    let waiting = inner.iter().map(|&i| (i as u32 + 1, 0.0)).collect();
    BubbleRules::declared(set, members).with_thread_loads(waiting)
}

/// A run that has not completed after this many times `--duration` stops
/// and is reported as unfinished.
pub const HORIZON_FACTOR: f64 = 20.0;

/// Periods (at the end of the time all threads are alive) whose per-thread
/// most frequent core is the "final" assignment.
const FINAL_WINDOW: usize = 20;

/// Assignments are tracked (makespan, Nash) only when threads × cores is
/// at most this.
const TRACK_LIMIT: usize = 4_000_000;

/// Rate of the running average drawn in plots (paper 000 Table IV: ν = 0.01).
const PLOT_AVERAGE_RATE: f64 = 0.01;

/// A finished run: its record and the running-average speed over time.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub record: RunRecord,
    /// (simulated seconds, running average of the mean speed).
    pub series: Vec<(f64, f64)>,
}

/// Everything shared by the runs of one invocation.
#[derive(Clone, Debug)]
pub struct Experiment {
    /// The whole machine; scenarios use part of it.
    pub topology: Topology,
    pub workload: WorkloadSpec,
    pub params: MachineParams,
    pub settings: Settings,
    /// Weight of the background load: on a loaded core when it shares the
    /// program's session (2 = two CPU hogs), of its whole session when it
    /// has its own (1 = one session of nice-0 threads), see
    /// [`MachineParams::load_session`].
    pub background_weight: f64,
}

/// A scenario made concrete on the experiment's machine.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub scenario: Scenario,
    pub topology: Topology,
    pub places: Places,
    pub background: BackgroundSchedule,
    /// The load game with the time-averaged background over `duration`.
    pub game: LoadGame,
    pub optimum: Optimum,
}

impl Experiment {
    /// Restricts the machine to the scenario's cores and precomputes its
    /// background load and best static assignment.
    pub fn prepare(&self, scenario: Scenario) -> Result<Prepared, SimError> {
        // The modelled machine's NUMA distances say how far its remote
        // memory is, as a real machine's firmware gives the latency ratio
        // (a thread of memory intensity 1 runs that many times slower there).
        let topology = self
            .topology
            .restrict(&self.cpus_for(scenario))?
            .with_remote_ratio(Some(self.params.numa_factor));
        let mut places = Places::new(&topology);
        // The learner's NUMA level is told how soon the modelled kernel
        // brings memory after a thread, as a live session reads whether the
        // real one does.
        places.kernel_moves_memory = self.params.numa_balancing_s.map(std::time::Duration::from_secs_f64);
        // pinlearn moves a pinned thread's memory after it where the
        // settings say so, as a live session does on real memory nodes.
        places.memory_moves_with_threads = self.settings.move_thread_memory && topology.nodes().len() > 1;
        let cores_per_node: Vec<usize> = topology.nodes().iter().map(|n| n.cores.len()).collect();
        let cores: usize = cores_per_node.iter().sum();
        let duration = self.workload.duration_s;
        let schedule = scenario.load_schedule(&cores_per_node, duration, HORIZON_FACTOR * duration);
        let background =
            BackgroundSchedule::from_load(&schedule, cores, self.background_weight, self.params.load_session);
        let game = LoadGame {
            demands: self.workload.demands(),
            background: background.average(cores, duration),
            capacity: vec![1.0; cores],
        };
        let optimum = game.optimum();
        Ok(Prepared {
            scenario,
            topology,
            places,
            background,
            game,
            optimum,
        })
    }

    /// The CPUs the program may use in `scenario`: threads / threads-per-core
    /// cores (at least 1, at most all), spread evenly over the nodes, the
    /// first cores of each node.
    pub fn cpus_for(&self, scenario: Scenario) -> CpuSet {
        let nodes = self.topology.nodes();
        let wanted = scenario.cores_for(self.workload.threads, self.topology.core_count());
        let mut per_node = vec![0usize; nodes.len()];
        let mut left = wanted;
        // Round-robin one core at a time over the nodes that still have cores.
        while left > 0 {
            for (count, node) in per_node.iter_mut().zip(nodes) {
                if left > 0 && *count < node.cores.len() {
                    *count += 1;
                    left -= 1;
                }
            }
        }
        let mut cpus = CpuSet::new();
        for (count, node) in per_node.iter().zip(nodes) {
            for core in &node.cores[..*count] {
                cpus = cpus.union(core);
            }
        }
        cpus
    }

    fn policy(&self, prepared: &Prepared, scheduler: Scheduler, seed: u64) -> Box<dyn Policy> {
        let layout = prepared.places.layout.clone();
        match scheduler.kind {
            SchedulerKind::Policy(PolicyChoice::Os) => Box::new(OsPolicy::new(layout)),
            SchedulerKind::Policy(PolicyChoice::Static) => Box::new(StaticPolicy::new(layout)),
            SchedulerKind::BestStatic => {
                let core_places: Vec<usize> = layout.all_cores().collect();
                let place_of: HashMap<ThreadKey, usize> = prepared
                    .optimum
                    .assignment
                    .iter()
                    .enumerate()
                    .map(|(index, &core)| (self.workload.key_of(index), core_places[core]))
                    .collect();
                Box::new(FixedPolicy::new("best-static", place_of, layout.whole()))
            }
            SchedulerKind::Policy(PolicyChoice::Bubbles) => {
                Box::new(self.settings.bubbles_policy(&prepared.places, false))
            }
            SchedulerKind::Policy(PolicyChoice::BubblesLearn) => {
                Box::new(self.settings.bubbles_policy(&prepared.places, true))
            }
            SchedulerKind::Policy(PolicyChoice::Learn) => {
                let cfg = LearnConfig {
                    objective: scheduler.objective.unwrap_or(self.settings.learn.objective),
                    ..self.settings.learn
                };
                Box::new(self.settings.learn_policy(&prepared.places, cfg, seed))
            }
        }
    }

    /// The bubbles the workload declares, as the real program would through
    /// the bubbles API: `heat` builds one bubble per NUMA node from a
    /// topology query, holding consecutive threads (paper 001 §5.2); `fib`
    /// one bubble per inner thread holding its two children, nested as the
    /// recursion (§5.1); the other workloads declare none (every thread is
    /// its own entity).
    fn declared_bubbles(&self, prepared: &Prepared) -> Option<BubbleRules> {
        if self.workload.kind == WorkloadKind::Fib {
            return Some(fib_bubbles(self.workload.threads));
        }
        if self.workload.kind != WorkloadKind::Heat {
            return None;
        }
        let nodes = prepared.topology.nodes().len();
        let threads = self.workload.threads;
        let set = BubbleSet::new((0..nodes).map(|n| BubbleSpec::new(format!("node{n}"))).collect())
            .expect("distinct names, no nesting");
        // The machine's thread key of a worker is its tid.
        let members = (0..nodes)
            .map(|n| {
                (threads * n / nodes..threads * (n + 1) / nodes)
                    .map(|i| self.workload.key_of(i) as u32)
                    .collect()
            })
            .collect();
        Some(BubbleRules::declared(set, members))
    }

    /// Runs one (scenario, scheduler, seed) to completion or the horizon;
    /// `repeat` pairs the run with os's run of the same seed.
    pub fn run(
        &self,
        prepared: &Prepared,
        scheduler: Scheduler,
        repeat: usize,
        seed: u64,
    ) -> Result<RunResult, SimError> {
        self.run_with(prepared, scheduler, repeat, seed, None)
    }

    /// As [`Experiment::run`], the engine writing a row per thread per
    /// period to `trace` (the CSV of `pinlearn run --trace`: the simulated
    /// threads' keys as tids, what the guard scored and which arm placed).
    pub fn run_traced(
        &self,
        prepared: &Prepared,
        scheduler: Scheduler,
        repeat: usize,
        seed: u64,
        trace: Trace,
    ) -> Result<RunResult, SimError> {
        self.run_with(prepared, scheduler, repeat, seed, Some(trace))
    }

    fn run_with(
        &self,
        prepared: &Prepared,
        scheduler: Scheduler,
        repeat: usize,
        seed: u64,
        trace: Option<Trace>,
    ) -> Result<RunResult, SimError> {
        let mut params = self.params.clone();
        if let Some(metric) = scheduler.metric {
            params.metric = SimMetric::from(metric);
        }
        let mut machine = SimMachine::new(
            &prepared.places,
            &self.workload,
            prepared.background.clone(),
            params.clone(),
            seed,
        );
        let mut engine = Engine::new(
            self.policy(prepared, scheduler, seed),
            prepared.places.clone(),
            self.settings.numa_every(),
            trace,
        );
        if prepared.places.memory_moves_with_threads {
            engine = engine.with_thread_memory(self.settings.numa_every());
        }
        if let SchedulerKind::Policy(policy) = scheduler.kind
            && policy.places_bubbles()
            && let Some(rules) = self.declared_bubbles(prepared)
        {
            engine = engine.with_bubbles(rules);
            if self.workload.kind == WorkloadKind::Fib {
                machine.wake_up_births();
            }
        }
        let period_s = self.settings.interval.as_secs_f64();
        let horizon = HORIZON_FACTOR * self.workload.duration_s;
        let threads = self.workload.threads;
        let constant_load = matches!(prepared.scenario.load, Load::None | Load::Constant);

        let mut speed_sum = 0.0;
        let mut speed_count = 0u64;
        let mut running_average: Option<f64> = None;
        let mut series = Vec::new();
        // Programs whose threads come and go (fib) have no final assignment.
        // Every thread the program runs (a pipeline has one per stage at least).
        let tasks = self.workload.tasks();
        let mut tracker = (self.workload.kind != WorkloadKind::Fib
            && tasks.saturating_mul(machine.cores()) <= TRACK_LIMIT)
            .then(|| AssignmentTracker::new(tasks, machine.cores()));
        let mut period = 0u64;
        loop {
            let time_s = period as f64 * period_s;
            engine.step(&mut machine, time_s)?;
            let known: Vec<f64> = machine.last_samples().iter().filter_map(|s| s.speed).collect();
            if !known.is_empty() {
                let mean = known.iter().sum::<f64>() / known.len() as f64;
                speed_sum += known.iter().sum::<f64>();
                speed_count += known.len() as u64;
                let average = running_average.map_or(mean, |a| a + PLOT_AVERAGE_RATE * (mean - a));
                running_average = Some(average);
                series.push((time_s, average));
            }
            if let Some(tracker) = tracker.as_mut()
                && machine.alive() == tasks
            {
                tracker.record(period, &machine.thread_cores(), constant_load.then_some(&prepared.game));
            }
            period += 1;
            if time_s >= horizon {
                break;
            }
            // A program that wakes up its bubbles when it creates threads
            // has them placed at once: the manager takes a period then.
            while machine.advance_to(period as f64 * period_s) {
                let now = machine.now();
                engine.step(&mut machine, now)?;
            }
            if machine.completion().is_some() {
                break;
            }
        }

        engine.flush_trace()?;
        let final_assignment = tracker.as_ref().and_then(AssignmentTracker::modal);
        let (makespan, nash) = match (final_assignment, constant_load) {
            (Some(a), true) => (Some(prepared.game.makespan(a)), Some(prepared.game.is_nash(a))),
            _ => (None, None),
        };
        let optimal_makespan = (constant_load && prepared.optimum.exact).then_some(prepared.optimum.makespan);
        let completion_s = machine.completion();
        let elapsed = completion_s.unwrap_or(machine.now());
        let totals = machine.totals().clone();
        let remote = engine.remote_share();
        let record = RunRecord {
            workload: self.workload.kind.to_string(),
            scenario: prepared.scenario.to_string(),
            scheduler: scheduler.to_string(),
            repeat,
            seed: Some(seed),
            threads,
            cores: machine.cores(),
            completion_s,
            mean_speed: (speed_count > 0).then(|| speed_sum / speed_count as f64),
            metric: Some(format!("{:?}", params.metric).to_lowercase()),
            repins: Some(engine.repins()),
            os_share: engine.guard_stats().map(|g| g.os_share()),
            manager_cpu_s: None,
            workload_cpu_s: None,
            assignment: None,
            model: Some(ModelRecord {
                mean_progress: if elapsed > 0.0 && threads > 0 {
                    totals.work / elapsed / threads as f64
                } else {
                    0.0
                },
                makespan_ratio: match (makespan, optimal_makespan) {
                    (Some(l), Some(best)) if best > 0.0 => Some(l / best),
                    _ => None,
                },
                makespan,
                optimal_makespan,
                nash,
                first_nash_period: tracker.as_ref().and_then(|t| t.first_nash),
                nash_share: tracker
                    .as_ref()
                    .filter(|t| constant_load && t.periods > 0)
                    .map(|t| t.nash_periods as f64 / t.periods as f64),
                periods: engine.periods(),
                migrations: totals.migrations,
                node_migrations: totals.node_migrations,
                balancer_moves: totals.balancer_moves,
                memory_moves: totals.memory_moves,
                remote_share: remote.map(|r| r.mean),
                remote_share_os: remote.and_then(|r| r.os),
                remote_share_learn: remote.and_then(|r| r.learn),
            }),
        };
        Ok(RunResult { record, series })
    }
}

/// Follows each thread's most frequent core over the last FINAL_WINDOW
/// periods (its modal core, which the learners' occasional exploration does
/// not move), and when and how often the modal assignment is a Nash
/// equilibrium of the load game.
struct AssignmentTracker {
    window: VecDeque<Vec<usize>>,
    /// counts[thread * cores + core]: periods of the window on that core.
    counts: Vec<u16>,
    cores: usize,
    modal: Vec<usize>,
    /// Periods recorded, and of those at a Nash equilibrium.
    periods: u64,
    nash_periods: u64,
    first_nash: Option<u64>,
}

impl AssignmentTracker {
    fn new(threads: usize, cores: usize) -> Self {
        AssignmentTracker {
            window: VecDeque::with_capacity(FINAL_WINDOW + 1),
            counts: vec![0; threads * cores],
            cores,
            modal: vec![0; threads],
            periods: 0,
            nash_periods: 0,
            first_nash: None,
        }
    }

    fn modal(&self) -> Option<&[usize]> {
        (!self.window.is_empty()).then_some(&self.modal[..])
    }

    /// Adds one period's assignment; with a game, also checks whether the
    /// modal assignment is a Nash equilibrium.
    fn record(&mut self, period: u64, assignment: &[usize], game: Option<&LoadGame>) {
        let removed = if self.window.len() == FINAL_WINDOW {
            self.window.pop_front()
        } else {
            None
        };
        for (thread, &core) in assignment.iter().enumerate() {
            let old = removed.as_ref().map(|r| r[thread]);
            if old == Some(core) {
                continue;
            }
            let row = &mut self.counts[thread * self.cores..(thread + 1) * self.cores];
            row[core] += 1;
            if let Some(old) = old {
                row[old] -= 1;
            }
            let modal = &mut self.modal[thread];
            if self.window.is_empty() || old == Some(*modal) || row[core] >= row[*modal] {
                *modal = (0..self.cores)
                    .max_by(|&a, &b| row[a].cmp(&row[b]).then(b.cmp(&a)))
                    .unwrap_or(0);
            }
        }
        self.window.push_back(assignment.to_vec());
        self.periods += 1;
        if let Some(game) = game
            && game.is_nash(&self.modal)
        {
            self.nash_periods += 1;
            self.first_nash.get_or_insert(period);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_take_the_first_cores_of_every_node_evenly() {
        let experiment = |threads| Experiment {
            topology: Topology::from_synthetic("node:2 core:14 pu:1").unwrap(),
            workload: WorkloadSpec {
                threads,
                ..WorkloadSpec::default()
            },
            params: MachineParams::default(),
            settings: Settings::default(),
            background_weight: 2.0,
        };
        let s = |name: &str| name.parse::<Scenario>().unwrap();
        assert_eq!(experiment(40).cpus_for(s("A.1")).to_string(), "0-4,14-18");
        assert_eq!(experiment(40).cpus_for(s("B.1")).to_string(), "0-9,14-23");
        assert_eq!(experiment(40).cpus_for(s("C.1")).len(), 28, "capped at the machine");
        assert_eq!(experiment(3).cpus_for(s("C.1")).to_string(), "0-1,14");
        assert_eq!(experiment(1).cpus_for(s("A.1")).len(), 1);
    }

    #[test]
    fn tracker_follows_the_most_frequent_core_and_when_it_became_nash() {
        let game = LoadGame::identical(vec![1.0, 1.0], 2);
        let mut tracker = AssignmentTracker::new(2, 2);
        assert_eq!(tracker.modal(), None);
        tracker.record(0, &[0, 0], Some(&game));
        assert_eq!(tracker.modal(), Some(&[0, 0][..]));
        assert_eq!(tracker.first_nash, None, "both on one core is not an equilibrium");
        tracker.record(1, &[0, 1], Some(&game));
        // Thread 1 has one period on each core: ties go to core 0.
        assert_eq!(tracker.modal(), Some(&[0, 0][..]));
        tracker.record(2, &[0, 1], Some(&game));
        assert_eq!(tracker.modal(), Some(&[0, 1][..]));
        assert_eq!(tracker.first_nash, Some(2));
        // One exploring period does not move the modal assignment.
        tracker.record(3, &[1, 1], Some(&game));
        assert_eq!(tracker.modal(), Some(&[0, 1][..]));
        assert_eq!(tracker.nash_periods, 2);
        // The window forgets: FINAL_WINDOW periods later [1, 0] is the modal.
        for period in 4..4 + FINAL_WINDOW as u64 {
            tracker.record(period, &[1, 0], Some(&game));
        }
        assert_eq!(tracker.modal(), Some(&[1, 0][..]));
        // On the way both threads' modal cores coincided for a while.
        assert!(tracker.nash_periods < tracker.periods);
        assert!(tracker.nash_periods > FINAL_WINDOW as u64 / 2);
        assert_eq!(tracker.first_nash, Some(2));
    }
}
