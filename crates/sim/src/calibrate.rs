//! Calibration: does the model agree with a real machine? The cells a real
//! `pinlearn bench` measured are simulated on the same topology, with the
//! same threads, load and session, and their ratios put side by side.
//!
//! ```text
//!   bench JSON (setup: cores, load session; workloads: name + command; runs)
//!      │ RealBench::parse: median completion per (workload, scenario, scheduler)
//!      ▼
//!   per workload: WorkloadSpec from its command (aco and binpack ─► barrier,
//!      │          aco --sync spin* ─► barrier-spin with its --spin, pipeline
//!      │          ─► pipeline with its --stages and --capacity, the rest ─►
//!      │          independent),
//!      │          each with its main thread asleep in join, sized per
//!      │          level to the real os time of that level without load (X.1),
//!      │          its grain that time over the waits (a spinning program's:
//!      │          the work of a round, without the spins of its turns at X.1)
//!      ▼
//!   Experiment on "node:1 core:N pu:1" ─► os, static, learn × seeds ─► medians
//!      ▼
//!   Calibration: per cell real and modelled static/os and learn/os, the
//!                real repeats' range, the difference in points, the winner
//!                of each side, how many cells agree (within
//!                `AGREEMENT_POINTS`, same winner) and how many miss by more
//!                than that beyond the real range
//!
//!   reproduction (two bench files or more): each file's medians held to
//!                the pool of the others by the same rule, as the model's
//!                are: how near two real runs of the matrix come to each other
//! ```
//!
//! The real runs' `learn` is the learner of the day the bench ran (its
//! JSON names the command, not the commit), the modelled one today's: the
//! learn columns compare only when both are of one version.

use std::collections::BTreeMap;

use pinlearn_engine::{PolicyChoice, Settings};
use pinlearn_experiment::{Load, LoadSession, Scenario, Scheduler};
use pinlearn_report::{Table, stats};
use pinlearn_topology::Topology;
use serde::Serialize;
use serde_json::Value;

use crate::SimError;
use crate::experiment::Experiment;
use crate::machine::{MachineParams, SimMetric};
use crate::workload::{WorkloadKind, WorkloadSpec};

/// A modelled ratio within this many points of the real one agrees.
pub const AGREEMENT_POINTS: f64 = 10.0;

/// How long a spin-then-block waiter of `pinlearn work aco` spins when its
/// command does not say (the workload's default).
const ACO_DEFAULT_SPIN_S: f64 = 200e-6;

/// The schedulers compared (best-static is left out: its real search and
/// the model's optimum answer different questions).
const SCHEDULERS: [&str; 3] = ["os", "static", "learn"];

/// What a real bench measured, reduced to what calibration needs.
#[derive(Clone, Debug, PartialEq)]
pub struct RealBench {
    pub cores: usize,
    /// Cores per NUMA node, when the bench recorded them.
    pub cores_per_node: Vec<usize>,
    pub load_session: LoadSession,
    pub date: Option<String>,
    pub command: Option<String>,
    /// (name, the `pinlearn work` command it ran).
    pub workloads: Vec<(String, String)>,
    /// Every completion (s) and the threads per (workload, scenario,
    /// scheduler): what [`RealBench::pool`] adds up and
    /// [`RealBench::cells`] takes the medians of.
    pub times: BTreeMap<(String, String, String), (Vec<f64>, usize)>,
    /// Completion (s) by repeat index per (workload, scenario, scheduler),
    /// for runs that name their repeat: what pairs a scheduler's run with
    /// os's run of the same repeat.
    pub repeats: BTreeMap<(String, String, String), BTreeMap<u64, f64>>,
    /// A node's memory bandwidth in cores' worth, as each pooled bench
    /// file that measured it says (`setup.memory_bandwidth.cores_worth`):
    /// their mean ([`RealBench::memory_bandwidth`]) is the model's
    /// [`MachineParams::memory_bandwidth`] unless one is given.
    pub memory_bandwidths: Vec<f64>,
}

fn bad(message: impl Into<String>) -> SimError {
    SimError::BadInput(message.into())
}

impl RealBench {
    /// Reads the JSON `pinlearn bench --json` writes (runs with
    /// `completion_s`, or `wall_s` as files of 2026-11-22 have it).
    pub fn parse(text: &str) -> Result<Self, SimError> {
        let doc: Value = serde_json::from_str(text).map_err(|e| bad(format!("not a bench JSON file: {e}")))?;
        let setup = doc
            .get("setup")
            .ok_or_else(|| bad("not a bench JSON file: it has no \"setup\""))?;
        let cores = setup
            .get("cores")
            .and_then(Value::as_u64)
            .filter(|&c| (1..=16_384).contains(&c))
            .ok_or_else(|| bad("the bench JSON's setup has no core count (\"cores\", 1 to 16384)"))?
            as usize;
        let cores_per_node: Vec<usize> = setup
            .get("cores_per_node")
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(Value::as_u64).map(|c| c as usize).collect())
            .unwrap_or_default();
        let load_session = match setup.get("load_session").and_then(Value::as_str) {
            None | Some("own") => LoadSession::Own,
            Some("same") => LoadSession::Same,
            Some(other) => {
                return Err(bad(format!(
                    "the bench JSON's load session {other:?} is neither own nor same"
                )));
            }
        };
        let memory_bandwidths = match setup.get("memory_bandwidth") {
            None | Some(Value::Null) => Vec::new(),
            Some(record) => vec![
                record
                    .get("cores_worth")
                    .and_then(Value::as_f64)
                    .filter(|b| b.is_finite() && *b > 0.0)
                    .ok_or_else(|| bad("the bench JSON's memory bandwidth has no positive \"cores_worth\""))?,
            ],
        };
        let text_of = |key: &str| setup.get(key).and_then(Value::as_str).map(str::to_string);
        let workloads = setup
            .get("workloads")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|pair| {
                        let pair = pair.as_array()?;
                        Some((pair.first()?.as_str()?.to_string(), pair.get(1)?.as_str()?.to_string()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let runs = doc
            .get("runs")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("not a bench JSON file: it has no \"runs\""))?;
        let mut times: BTreeMap<(String, String, String), (Vec<f64>, usize)> = BTreeMap::new();
        let mut repeats: BTreeMap<(String, String, String), BTreeMap<u64, f64>> = BTreeMap::new();
        for run in runs {
            let field = |key: &str| run.get(key).and_then(Value::as_str).map(str::to_string);
            let (Some(workload), Some(scenario), Some(scheduler)) =
                (field("workload"), field("scenario"), field("scheduler"))
            else {
                return Err(bad("a run of the bench JSON lacks its workload, scenario or scheduler"));
            };
            let seconds = run
                .get("completion_s")
                .or_else(|| run.get("wall_s"))
                .and_then(Value::as_f64)
                .filter(|s| s.is_finite() && *s > 0.0);
            let threads = run.get("threads").and_then(Value::as_u64).unwrap_or(0) as usize;
            if let Some(seconds) = seconds {
                let key = (workload, scenario, scheduler);
                if let Some(repeat) = run.get("repeat").and_then(Value::as_u64) {
                    repeats.entry(key.clone()).or_default().insert(repeat, seconds);
                }
                let entry = times.entry(key).or_default();
                entry.0.push(seconds);
                entry.1 = threads;
            }
        }
        Ok(RealBench {
            cores,
            cores_per_node,
            load_session,
            date: text_of("date"),
            command: text_of("command"),
            workloads,
            times,
            repeats,
            memory_bandwidths,
        })
    }

    /// The runs of `self` and `other`, two benches of one machine (the same
    /// cores, load session and workloads), as one: `other`'s repeats come
    /// after `self`'s, so that each run still pairs with os's run of its
    /// own repeat.
    pub fn pool(mut self, other: RealBench) -> Result<Self, SimError> {
        if (self.cores, &self.cores_per_node, self.load_session, &self.workloads)
            != (other.cores, &other.cores_per_node, other.load_session, &other.workloads)
        {
            return Err(bad(
                "the bench files differ in their CPUs, load session or workloads: pool only runs of one matrix on one machine",
            ));
        }
        let offset = self
            .repeats
            .values()
            .filter_map(|runs| runs.keys().next_back())
            .max()
            .map_or(0, |last| last + 1);
        for (key, runs) in other.repeats {
            let pooled = self.repeats.entry(key).or_default();
            pooled.extend(runs.into_iter().map(|(repeat, t)| (repeat + offset, t)));
        }
        for (key, (values, threads)) in other.times {
            let pooled = self.times.entry(key).or_insert_with(|| (Vec::new(), threads));
            pooled.0.extend(values);
        }
        let joined = |a: Option<String>, b: Option<String>| match (a, b) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        self.memory_bandwidths.extend(other.memory_bandwidths);
        self.date = joined(self.date, other.date);
        self.command = joined(self.command, other.command);
        Ok(self)
    }

    /// The mean of the memory bandwidths the pooled files measured, if any.
    pub fn memory_bandwidth(&self) -> Option<f64> {
        let measured = &self.memory_bandwidths;
        (!measured.is_empty()).then(|| measured.iter().sum::<f64>() / measured.len() as f64)
    }

    /// Median completion (s) and threads per (workload, scenario, scheduler).
    pub fn cells(&self) -> BTreeMap<(String, String, String), (f64, usize)> {
        self.times
            .iter()
            .filter_map(|(key, (values, threads))| Some((key.clone(), (stats(values)?.median, *threads))))
            .collect()
    }

    /// The times of `scheduler` over os's of the same repeat, in one cell
    /// (empty where the runs name no repeats).
    fn paired_ratios(&self, workload: &str, scenario: &str, scheduler: &str) -> Vec<f64> {
        let key = |s: &str| (workload.to_string(), scenario.to_string(), s.to_string());
        let (Some(os), Some(other)) = (self.repeats.get(&key("os")), self.repeats.get(&key(scheduler))) else {
            return Vec::new();
        };
        other
            .iter()
            .filter_map(|(repeat, t)| os.get(repeat).map(|os| t / os))
            .collect()
    }

    /// The synthetic topology of the bench's CPUs: one node of `cores`
    /// cores, or the recorded nodes when they are all the same size.
    pub fn topology(&self) -> String {
        match self.cores_per_node.as_slice() {
            [first, rest @ ..] if self.cores_per_node.len() > 1 && rest.iter().all(|c| c == first) => {
                format!("node:{} core:{first} pu:1", self.cores_per_node.len())
            }
            _ => format!("node:1 core:{} pu:1", self.cores),
        }
    }
}

/// `pinlearn work aco`'s iterations when its command does not say.
const ACO_DEFAULT_ITERATIONS: f64 = 4000.0;

/// `pinlearn work pipeline`'s items when its command does not say.
const PIPELINE_DEFAULT_ITEMS: f64 = 600_000.0;

/// The simulated program that stands for a real workload, or why none
/// does, with how many times each of the real program's threads waits over
/// a run (barrier rounds, pipeline items; `None`: they never wait for each
/// other or the command does not say): a run's length over it is the
/// program's grain ([`WorkloadSpec::grain_s`]).
pub fn sim_workload(name: &str, command: &str) -> Result<(WorkloadSpec, Option<f64>), String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let value_of = |flag: &str| words.windows(2).find(|w| w[0] == flag).map(|w| w[1]);
    let count_of = |flag: &str| {
        value_of(flag)
            .and_then(|text| text.parse::<f64>().ok())
            .filter(|n| n.is_finite() && *n >= 1.0)
    };
    let work_at = words.iter().position(|w| *w == "work");
    let workload = work_at
        .and_then(|i| {
            words[i + 1..]
                .iter()
                .find(|w| !w.starts_with('-') && w.parse::<f64>().is_err())
        })
        .copied()
        .unwrap_or(name);
    // A `pinlearn work` program: its main thread creates the workers and
    // waits for them in join, and a round-robin pin counts it too.
    // It beats as it ran: heartbeats unless its command turned them off
    // (another program reports nothing).
    let mut spec = WorkloadSpec {
        memory_intensity: 0.0,
        main_thread: true,
        heartbeats: work_at.is_some() && !words.contains(&"--no-heartbeats"),
        ..WorkloadSpec::default()
    };
    let waits = match workload {
        // Two barriers an iteration.
        "aco" => Some(2.0 * count_of("--iterations").unwrap_or(ACO_DEFAULT_ITERATIONS)),
        // Two barriers a cycle; without --max-cycles the run stops on time.
        "binpack" => count_of("--max-cycles").map(|cycles| 2.0 * cycles),
        "pipeline" => Some(count_of("--items").unwrap_or(PIPELINE_DEFAULT_ITEMS)),
        _ => None,
    };
    match workload {
        "aco" => match value_of("--sync") {
            None | Some("block") => spec.kind = WorkloadKind::Barrier,
            Some("spin") => {
                spec.kind = WorkloadKind::BarrierSpin;
                spec.spin_s = None;
            }
            Some("spin-then-block") => {
                spec.kind = WorkloadKind::BarrierSpin;
                spec.spin_s = Some(match value_of("--spin") {
                    Some(text) => pinlearn_engine::parse_duration(text)
                        .map_err(|e| format!("{name}: {e}"))?
                        .as_secs_f64(),
                    None => ACO_DEFAULT_SPIN_S,
                });
            }
            Some(other) => return Err(format!("{name}: unknown --sync {other}")),
        },
        "pipeline" => {
            spec.kind = WorkloadKind::Pipeline;
            if let Some(stages) = value_of("--stages") {
                spec.stages = stages
                    .split(',')
                    .map(|s| s.parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0))
                    .collect::<Option<Vec<f64>>>()
                    .ok_or_else(|| format!("{name}: --stages {stages} is not a list of positive numbers"))?;
            }
            // The real queues' capacity: with the grain, how long they
            // take to fill (`machine.rs`, full queues).
            if let Some(capacity) = count_of("--capacity") {
                spec.queue_capacity = capacity as u64;
            }
        }
        // Cycles over the candidate pool, two blocking barriers each.
        "binpack" => spec.kind = WorkloadKind::Barrier,
        "blackscholes" | "swaptions" => spec.kind = WorkloadKind::Independent,
        // A triad over arrays far larger than the caches: all memory, which
        // `--memory-bandwidth` limits (and remote nodes slow).
        "stream" => {
            spec.kind = WorkloadKind::Independent;
            spec.memory_intensity = 1.0;
        }
        other => return Err(format!("{name}: no simulated program stands for `{other}`")),
    }
    Ok((spec, waits))
}

/// A round of a program whose threads spin `spin` (at most a `slice`)
/// before they sleep, measured as `round` seconds with `per_core` of them
/// on each core: they take turns there, and all but the last to arrive
/// spin while the others wait behind them, so `round = k w + (k - 1) spin`.
/// Returns the work of a thread's round `w` (the grain; at least a quarter
/// of its share of the round, where the spins would leave less) and the
/// share of the round that was work (`k w / round`), which sizes the
/// simulated work so that the modelled Linux, paying the same spins
/// (`machine.rs`, turns), takes the real time.
fn spinning_round(round: f64, per_core: usize, spin: f64, slice: f64) -> (f64, f64) {
    let k = per_core.max(1) as f64;
    let spin = spin.min(slice);
    let work = ((round - (k - 1.0) * spin) / k).max(round / (4.0 * k));
    (work, 1.0 / crate::machine::turns_slowdown(per_core, spin / work))
}

/// One cell side by side.
#[derive(Clone, Debug, Serialize)]
pub struct CalibrationCell {
    pub workload: String,
    pub scenario: String,
    pub threads: usize,
    pub real_os_s: f64,
    pub sim_os_s: Option<f64>,
    /// scheduler ─► (real ratio to os, modelled ratio to os).
    pub ratios: BTreeMap<String, (Option<f64>, Option<f64>)>,
    /// scheduler ─► the lowest and highest of its real runs over os's run
    /// of the same repeat (absent where the runs name no repeats): how far
    /// the real machine itself strays from one repeat to the next.
    pub real_range: BTreeMap<String, (f64, f64)>,
    /// The real winners told from the noise ([`real_winners`]): the
    /// schedulers faster than os by more than `TIE_SHARE` in every repeat
    /// whose medians are within `TIE_SHARE` of the fastest's (more than one
    /// when the runs cannot tell them apart), else os.
    pub real_winners: Vec<String>,
    /// The real winner by medians alone, as the model's ([`winner`]).
    pub real_median_winner: String,
    pub sim_winner: Option<String>,
}

impl CalibrationCell {
    /// Every ratio within `AGREEMENT_POINTS` and the same winner (the real
    /// one told from the noise).
    pub fn agrees(&self) -> bool {
        self.same_winner() && self.ratios_agree()
    }

    /// The modelled winner is one of the real winners.
    pub fn same_winner(&self) -> bool {
        self.sim_winner
            .as_ref()
            .is_some_and(|sim| self.real_winners.contains(sim))
    }

    /// Every ratio within `AGREEMENT_POINTS` and the same winner by medians.
    pub fn agrees_by_medians(&self) -> bool {
        self.sim_winner.as_deref() == Some(self.real_median_winner.as_str()) && self.ratios_agree()
    }

    /// Some modelled ratio lies more than `AGREEMENT_POINTS` outside the
    /// range of the real repeats' ratios (or, without repeats, of the real
    /// median): a miss that the real runs' spread does not explain.
    pub fn misses_beyond_spread(&self) -> bool {
        self.ratios.iter().any(|(label, pair)| match pair {
            (Some(real), Some(sim)) => {
                let (low, high) = self.real_range.get(label).copied().unwrap_or((*real, *real));
                let outside = (low - sim).max(sim - high).max(0.0);
                outside * 100.0 > AGREEMENT_POINTS
            }
            (Some(_), None) => true,
            (None, _) => false,
        })
    }

    fn ratios_agree(&self) -> bool {
        self.ratios.values().all(|pair| match pair {
            (Some(real), Some(sim)) => ((sim - real) * 100.0).abs() <= AGREEMENT_POINTS,
            (None, _) => true,
            (Some(_), None) => false,
        })
    }
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    pub topology: String,
    pub load_session: LoadSession,
    pub real_date: Option<String>,
    pub real_command: Option<String>,
    pub seeds: usize,
    /// The model's memory bandwidth per node, in cores' worth (`None`: no
    /// limit).
    pub memory_bandwidth: Option<f64>,
    pub cells: Vec<CalibrationCell>,
    /// Each real file against the others, when more than one was pooled
    /// ([`reproduction`]; the caller fills it in).
    pub reproduction: Vec<Reproduction>,
    /// Workloads left out, with the reason.
    pub skipped: Vec<String>,
}

/// A scheduler within this share of os's time ties with it.
pub const TIE_SHARE: f64 = 0.02;

/// The fastest scheduler, or `os` when none is faster than os by more than
/// `TIE_SHARE` (a placement that gains less than that did not win).
fn winner(times: &BTreeMap<&str, f64>) -> Option<String> {
    let (name, best) = times.iter().min_by(|a, b| a.1.total_cmp(b.1))?;
    match times.get("os") {
        Some(os) if *best >= os * (1.0 - TIE_SHARE) => Some("os".to_string()),
        _ => Some((*name).to_string()),
    }
}

/// The real winners, told from the noise: among the schedulers faster than
/// os by more than `TIE_SHARE` in every repeat (each run over os's run of
/// the same repeat), the fastest by median and those within `TIE_SHARE` of
/// it; `os` alone when there is none. Where the runs name no repeats, a
/// median faster than os's by more than `TIE_SHARE` counts instead.
fn real_winners(real: &RealBench, workload: &str, scenario: &str, times: &BTreeMap<&str, f64>) -> Vec<String> {
    let clear: BTreeMap<&str, f64> = times
        .iter()
        .filter(|(label, _)| **label != "os")
        .filter_map(|(label, t)| {
            let ratios = real.paired_ratios(workload, scenario, label);
            let clear = if ratios.is_empty() {
                times.get("os").is_some_and(|os| *t < os * (1.0 - TIE_SHARE))
            } else {
                ratios.iter().all(|r| *r < 1.0 - TIE_SHARE)
            };
            clear.then_some((*label, *t))
        })
        .collect();
    let Some(best) = clear.values().copied().min_by(f64::total_cmp) else {
        return vec!["os".to_string()];
    };
    let mut winners: Vec<(&str, f64)> = clear
        .into_iter()
        .filter(|(_, t)| *t <= best * (1.0 + TIE_SHARE))
        .collect();
    winners.sort_by(|a, b| a.1.total_cmp(&b.1));
    winners.into_iter().map(|(label, _)| label.to_string()).collect()
}

/// Simulates every cell of `real` (schedulers os, static and learn, `seeds`
/// seeds from `settings.seed`) and compares; the model's load session is the
/// bench's unless `session` says otherwise (to see what the session model
/// changes).
pub fn calibrate(
    real: &RealBench,
    settings: &Settings,
    params: &MachineParams,
    seeds: u64,
    session: Option<LoadSession>,
) -> Result<Calibration, SimError> {
    if seeds == 0 {
        return Err(bad("--seeds must be at least 1"));
    }
    let spec = real.topology();
    let topology = Topology::from_spec(&spec)?;
    let mut params = params.clone();
    params.load_session = session.unwrap_or(real.load_session);
    params.metric = SimMetric::from(settings.metric);
    params.memory_bandwidth = params.memory_bandwidth.or(real.memory_bandwidth());
    // `pinlearn load` runs one spinner per loaded CPU: one nice-0 thread per
    // core in the workload's session, one group of nice-0 weight in its own.
    let background_weight = 1.0;
    let schedulers = [PolicyChoice::Os, PolicyChoice::Static, PolicyChoice::Learn].map(Scheduler::policy);
    let mut cells = Vec::new();
    let mut skipped = Vec::new();
    let real_cells = real.cells();
    let slice = crate::machine::scheduler_slice_s(topology.core_count());
    for (name, command) in &real.workloads {
        let (base, waits) = match sim_workload(name, command) {
            Ok(found) => found,
            Err(reason) => {
                skipped.push(reason);
                continue;
            }
        };
        let scenarios: Vec<String> = {
            let mut list: Vec<String> = real_cells
                .keys()
                .filter(|(w, _, s)| w == name && s == "os")
                .map(|(_, scenario, _)| scenario.clone())
                .collect();
            list.sort_by_key(|s| s.parse::<Scenario>().ok());
            list
        };
        for scenario_name in scenarios {
            let Ok(scenario) = scenario_name.parse::<Scenario>() else {
                skipped.push(format!("{name} {scenario_name}: not a scenario of this version"));
                continue;
            };
            let (_, threads) = real_cells[&(name.clone(), scenario_name.clone(), "os".to_string())];
            // The program's length without load at this level sizes the work.
            let unloaded = Scenario {
                load: Load::None,
                ..scenario
            }
            .to_string();
            let Some(&(duration, _)) = real_cells.get(&(name.clone(), unloaded.clone(), "os".to_string())) else {
                skipped.push(format!(
                    "{name} {scenario_name}: no os run of {unloaded} to size the work"
                ));
                continue;
            };
            let round_s = waits.map(|n| duration / n);
            let per_core = threads.max(1).div_ceil(topology.core_count().max(1));
            let (grain_s, duration_s) = match (round_s, base.kind) {
                (Some(round), WorkloadKind::BarrierSpin) => {
                    let spin = base.spin_s.unwrap_or(f64::INFINITY);
                    let (work, useful) = spinning_round(round, per_core, spin, slice);
                    (Some(work), duration * useful)
                }
                _ => (round_s, duration),
            };
            let experiment = Experiment {
                topology: topology.clone(),
                workload: WorkloadSpec {
                    threads: threads.max(1),
                    duration_s,
                    grain_s,
                    ..base.clone()
                },
                params: params.clone(),
                settings: settings.clone(),
                background_weight,
            };
            let prepared = experiment.prepare(scenario)?;
            let mut sim_times: BTreeMap<&str, f64> = BTreeMap::new();
            for (scheduler, label) in schedulers.iter().zip(SCHEDULERS) {
                let mut values = Vec::new();
                for k in 0..seeds {
                    let result = experiment.run(&prepared, *scheduler, k as usize, settings.seed.wrapping_add(k))?;
                    if let Some(t) = result.record.completion_s {
                        values.push(t);
                    }
                }
                if let Some(summary) = stats(&values).filter(|s| s.n as u64 == seeds) {
                    sim_times.insert(label, summary.median);
                }
            }
            cells.push(side_by_side(
                real,
                &real_cells,
                name,
                &scenario_name,
                threads,
                sim_times,
            ));
        }
    }
    if cells.is_empty() {
        return Err(bad(format!(
            "nothing to calibrate: no workload of the bench JSON has a simulated counterpart ({})",
            skipped.join("; ")
        )));
    }
    Ok(Calibration {
        topology: spec,
        load_session: params.load_session,
        real_date: real.date.clone(),
        real_command: real.command.clone(),
        seeds: seeds as usize,
        memory_bandwidth: params.memory_bandwidth,
        cells,
        reproduction: Vec::new(),
        skipped,
    })
}

/// The median time of each of [`SCHEDULERS`] that ran one cell of
/// `cells` ([`RealBench::cells`]).
fn scheduler_times(
    cells: &BTreeMap<(String, String, String), (f64, usize)>,
    name: &str,
    scenario: &str,
) -> BTreeMap<&'static str, f64> {
    SCHEDULERS
        .iter()
        .filter_map(|label| {
            let key = (name.to_string(), scenario.to_string(), label.to_string());
            cells.get(&key).map(|&(t, _)| (*label, t))
        })
        .collect()
}

/// One cell of `real` beside `other`'s median times per scheduler (the
/// model's, or another real file's): each one's ratios to its own os, the
/// real repeats' range and both winners.
fn side_by_side(
    real: &RealBench,
    real_cells: &BTreeMap<(String, String, String), (f64, usize)>,
    name: &str,
    scenario: &str,
    threads: usize,
    mut other: BTreeMap<&str, f64>,
) -> CalibrationCell {
    let real_times = scheduler_times(real_cells, name, scenario);
    let real_os = real_times.get("os").copied().unwrap_or(f64::NAN);
    let other_os = other.get("os").copied();
    let real_range = SCHEDULERS[1..]
        .iter()
        .filter_map(|label| {
            let ratios = real.paired_ratios(name, scenario, label);
            let low = ratios.iter().copied().min_by(f64::total_cmp)?;
            let high = ratios.iter().copied().max_by(f64::total_cmp)?;
            Some((label.to_string(), (low, high)))
        })
        .collect();
    let ratios = SCHEDULERS[1..]
        .iter()
        .map(|label| {
            let real_ratio = real_times.get(label).map(|t| t / real_os);
            let other_ratio = other_os.and_then(|os| other.get(label).map(|t| t / os));
            (label.to_string(), (real_ratio, other_ratio))
        })
        .collect();
    // Winners among the schedulers both sides ran.
    other.retain(|label, _| real_times.contains_key(label));
    CalibrationCell {
        workload: name.to_string(),
        scenario: scenario.to_string(),
        threads,
        real_os_s: real_os,
        sim_os_s: other_os,
        ratios,
        real_range,
        real_winners: real_winners(real, name, scenario, &real_times),
        real_median_winner: winner(&real_times).unwrap_or_else(|| "os".into()),
        sim_winner: winner(&other),
    }
}

/// How one real bench file agrees with the others pooled, held to the
/// model's rule: its medians stand where the model's would.
#[derive(Clone, Debug, Serialize)]
pub struct Reproduction {
    /// The file's date (`setup.date`).
    pub date: Option<String>,
    /// Cells both sides ran with os, static and learn.
    pub cells: usize,
    /// Of those, every ratio within `AGREEMENT_POINTS` of the others' and a
    /// winner among theirs ([`CalibrationCell::agrees`]).
    pub agree: usize,
    pub same_winner: usize,
    /// A ratio more than `AGREEMENT_POINTS` outside the others' repeats'
    /// range ([`CalibrationCell::misses_beyond_spread`]).
    pub beyond_spread: usize,
}

/// The real machine against itself: each of `files` (benches of one matrix
/// on one machine, as [`RealBench::pool`] takes them) beside the pool of the
/// others, by the rule the model is held to. How often two real runs of the
/// same matrix agree is as close as a model can be expected to come. Empty
/// for fewer than two files. The learn columns compare only where the
/// files ran one learner.
pub fn reproduction(files: &[RealBench]) -> Result<Vec<Reproduction>, SimError> {
    if files.len() < 2 {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let mut rest = files
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, f)| f.clone());
        let first = rest.next().expect("two files at least");
        let others = rest.try_fold(first, RealBench::pool)?;
        let other_cells = others.cells();
        let own_cells = file.cells();
        let mut found = Reproduction {
            date: file.date.clone(),
            cells: 0,
            agree: 0,
            same_winner: 0,
            beyond_spread: 0,
        };
        for ((name, scenario, label), &(_, threads)) in &own_cells {
            if label != "os" {
                continue;
            }
            let own = scheduler_times(&own_cells, name, scenario);
            if own.len() < SCHEDULERS.len() || scheduler_times(&other_cells, name, scenario).len() < SCHEDULERS.len() {
                continue;
            }
            let cell = side_by_side(&others, &other_cells, name, scenario, threads, own);
            found.cells += 1;
            found.agree += usize::from(cell.agrees());
            found.same_winner += usize::from(cell.same_winner());
            found.beyond_spread += usize::from(cell.misses_beyond_spread());
        }
        out.push(found);
    }
    Ok(out)
}

impl Calibration {
    /// The side-by-side table and the agreement count.
    pub fn table(&self) -> String {
        let percent = |r: Option<f64>| r.map_or("—".to_string(), |r| format!("{:+.0}%", (r - 1.0) * 100.0));
        let points = |r: f64| format!("{:+.0}", (r - 1.0) * 100.0);
        // The real median with the range of the real repeats' ratios.
        let real_column = |cell: &CalibrationCell, label: &str, real: Option<f64>| match cell.real_range.get(label) {
            Some(&(low, high)) if real.is_some() => format!("{} [{}..{}]", percent(real), points(low), points(high)),
            _ => percent(real),
        };
        let mut table = Table {
            headers: [
                "workload",
                "scenario",
                "real static",
                "sim static",
                "real learn",
                "sim learn",
                "winner real",
                "winner sim",
                "agrees",
            ]
            .map(String::from)
            .to_vec(),
            rows: Vec::new(),
        };
        for cell in &self.cells {
            let pair = |label: &str| cell.ratios.get(label).copied().unwrap_or((None, None));
            let (real_static, sim_static) = pair("static");
            let (real_learn, sim_learn) = pair("learn");
            table.rows.push(vec![
                cell.workload.clone(),
                cell.scenario.clone(),
                real_column(cell, "static", real_static),
                percent(sim_static),
                real_column(cell, "learn", real_learn),
                percent(sim_learn),
                cell.real_winners.join("/"),
                cell.sim_winner.clone().unwrap_or_else(|| "—".into()),
                if cell.agrees() { "yes" } else { "no" }.to_string(),
            ]);
        }
        let agree = self.cells.iter().filter(|c| c.agrees()).count();
        let agree_by_medians = self.cells.iter().filter(|c| c.agrees_by_medians()).count();
        let winners = self.cells.iter().filter(|c| c.same_winner()).count();
        let beyond = self.cells.iter().filter(|c| c.misses_beyond_spread()).count();
        let mut text = table.to_text();
        text += &format!(
            "{agree} of {} cells agree (every ratio to os within {AGREEMENT_POINTS} points and the same winner; \
             a real scheduler wins only if faster than os by more than {:.0}% in every repeat, a modelled one \
             if its median is; else os wins); the same winner in {winners}; with the real winner by medians \
             too, {agree_by_medians} agree; a modelled ratio more than {AGREEMENT_POINTS} points outside the \
             real repeats' range [lowest..highest, in points] in {beyond}; model: {}, load session {}, memory \
             bandwidth {}, {} seed(s); real: {}\n",
            self.cells.len(),
            TIE_SHARE * 100.0,
            self.topology,
            self.load_session,
            self.memory_bandwidth
                .map_or("unlimited".to_string(), |b| format!("{b:.2} cores' worth a node")),
            self.seeds,
            self.real_date.as_deref().unwrap_or("undated")
        );
        for file in &self.reproduction {
            text += &format!(
                "the real file of {} against the other files by the same rule: {} of {} cells agree, the same \
                 winner in {}, more than {AGREEMENT_POINTS} points outside their repeats' range in {}\n",
                file.date.as_deref().unwrap_or("no date"),
                file.agree,
                file.cells,
                file.same_winner,
                file.beyond_spread
            );
        }
        for reason in &self.skipped {
            text += &format!("left out: {reason}\n");
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spinning_round_splits_into_the_work_and_the_spins_of_its_turns() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b.abs().max(1e-12);
        // `aco --sync spin-then-block`, 4 threads on 2 CPUs: rounds of 0.43
        // ms are two works of 0.115 ms and one spin of 0.2 ms.
        let (work, useful) = spinning_round(0.43e-3, 2, 0.2e-3, 1.4e-3);
        assert!(close(work, 0.115e-3), "{work}");
        assert!(close(useful, 0.23 / 0.43), "{useful}");
        // One thread a core: nobody spins behind another.
        assert_eq!(spinning_round(0.2e-3, 1, 0.2e-3, 1.4e-3), (0.2e-3, 1.0));
        // A spin until released is cut by the slice: 0.43 = 2 w + 0.4 (w
        // 0.015 ms) without it, but the slice of 0.1 ms leaves w = 0.165.
        let (work, _) = spinning_round(0.43e-3, 2, f64::INFINITY, 0.1e-3);
        assert!(close(work, 0.165e-3), "{work}");
        // Spins longer than the round leaves room for: the work is kept at
        // a quarter of its share of the round.
        let (work, useful) = spinning_round(0.3e-3, 4, 0.2e-3, 1.4e-3);
        assert!(close(work, 0.3e-3 / 16.0), "{work}");
        assert!(useful > 0.0 && useful < 1.0, "{useful}");
    }

    const BENCH: &str = r#"{
      "setup": {"date": "2026-11-22T12:46:09Z", "cores": 2, "load_session": "own",
                "workloads": [["aco", "pinlearn work aco --iterations 3000"],
                              ["aco-spin", "pinlearn work aco --iterations 2400 --sync spin-then-block"],
                              ["stream", "pinlearn work stream --size 0.5 --runs 600"],
                              ["fib", "pinlearn work fib"]]},
      "runs": [
        {"workload": "aco", "scenario": "B.1", "scheduler": "os", "threads": 4, "wall_s": 1.0},
        {"workload": "aco", "scenario": "B.1", "scheduler": "os", "threads": 4, "wall_s": 3.0},
        {"workload": "aco", "scenario": "B.1", "scheduler": "os", "threads": 4, "wall_s": 1.2},
        {"workload": "aco", "scenario": "B.2", "scheduler": "static", "threads": 4, "completion_s": 1.5},
        {"workload": "aco", "scenario": "B.2", "scheduler": "os", "threads": 4, "completion_s": null}
      ]}"#;

    #[test]
    fn a_bench_file_gives_medians_per_cell_and_its_machine() {
        let real = RealBench::parse(BENCH).expect("parses");
        assert_eq!(real.cores, 2);
        assert_eq!(real.topology(), "node:1 core:2 pu:1");
        assert_eq!(real.load_session, LoadSession::Own);
        let key = |s: &str, k: &str| ("aco".to_string(), s.to_string(), k.to_string());
        assert_eq!(real.cells()[&key("B.1", "os")], (1.2, 4));
        assert_eq!(real.cells()[&key("B.2", "static")], (1.5, 4));
        assert!(
            !real.cells().contains_key(&key("B.2", "os")),
            "an unfinished run has no time"
        );
    }

    #[test]
    fn a_bench_file_gives_the_memory_bandwidth_it_measured() {
        assert_eq!(RealBench::parse(BENCH).expect("parses").memory_bandwidth(), None);
        let with = |record: &str| {
            BENCH.replace(
                r#""cores": 2,"#,
                &format!(r#""cores": 2, "memory_bandwidth": {record},"#),
            )
        };
        let measured = |worth: f64| {
            with(&format!(
                r#"{{"workload": "stream", "threads": 2, "one_core_s": 2.8, "node_s": 1.95, "node_cores": 2, "cores_worth": {worth}}}"#
            ))
        };
        let first = RealBench::parse(&measured(1.4)).expect("parses");
        assert_eq!(first.memory_bandwidth(), Some(1.4));
        assert_eq!(
            RealBench::parse(&with("null")).expect("parses").memory_bandwidth(),
            None
        );
        for bad in [measured(0.0), measured(-1.0), with("{}")] {
            let error = RealBench::parse(&bad)
                .expect_err("no positive cores' worth")
                .to_string();
            assert!(error.contains("cores_worth"), "{error}");
        }
        // Measured in three files of one machine, one without: the mean of
        // the three measures.
        let pooled = [measured(1.6), BENCH.to_string(), measured(1.9)]
            .iter()
            .map(|text| RealBench::parse(text).expect("parses"))
            .try_fold(first, RealBench::pool)
            .expect("one machine");
        assert_eq!(pooled.memory_bandwidths, [1.4, 1.6, 1.9]);
        assert!((pooled.memory_bandwidth().expect("measured") - 1.6333333333333333).abs() < 1e-12);
    }

    #[test]
    fn two_benches_of_one_machine_pool_their_runs_and_keep_their_pairs() {
        let bench = |os: [f64; 2], static_: [f64; 2]| {
            let runs: Vec<String> = (0..2)
                .flat_map(|repeat| {
                    [("os", os[repeat]), ("static", static_[repeat])].map(|(scheduler, t)| {
                        format!(
                            r#"{{"workload": "aco", "scenario": "B.2", "scheduler": "{scheduler}", "repeat": {repeat}, "threads": 4, "completion_s": {t}}}"#
                        )
                    })
                })
                .collect();
            format!(
                r#"{{"setup": {{"cores": 2, "date": "d", "workloads": [["aco", "pinlearn work aco"]]}}, "runs": [{}]}}"#,
                runs.join(",")
            )
        };
        let first = RealBench::parse(&bench([2.0, 2.0], [1.0, 1.0])).expect("parses");
        let second = RealBench::parse(&bench([3.0, 3.0], [3.75, 3.75])).expect("parses");
        let pooled = first.pool(second).expect("one machine");
        let key = |k: &str| ("aco".to_string(), "B.2".to_string(), k.to_string());
        assert_eq!(pooled.times[&key("os")].0.len(), 4);
        assert_eq!(pooled.cells()[&key("os")].0, 2.5, "the median of all four");
        let mut ratios = pooled.paired_ratios("aco", "B.2", "static");
        ratios.sort_by(f64::total_cmp);
        assert_eq!(ratios, [0.5, 0.5, 1.25, 1.25], "each run over os's of its own repeat");
        assert_eq!(pooled.date.as_deref(), Some("d; d"));
        let other_machine =
            RealBench::parse(&bench([1.0, 1.0], [1.0, 1.0]).replace("\"cores\": 2", "\"cores\": 4")).expect("parses");
        let error = pooled.pool(other_machine).expect_err("4 cores").to_string();
        assert!(error.contains("one machine"), "{error}");
    }

    #[test]
    fn each_real_file_is_held_to_the_others_by_the_model_s_rule() {
        // Three repeats of os, static and learn in two scenarios; `times`
        // gives each scheduler's run per scenario, the same in every repeat.
        let bench = |date: &str, times: [(&str, [f64; 3]); 2]| {
            let mut runs = Vec::new();
            for (scenario, [os, static_, learn]) in times {
                for repeat in 0..3 {
                    for (scheduler, t) in [("os", os), ("static", static_), ("learn", learn)] {
                        runs.push(format!(
                            r#"{{"workload": "aco", "scenario": "{scenario}", "scheduler": "{scheduler}", "repeat": {repeat}, "threads": 4, "completion_s": {t}}}"#
                        ));
                    }
                }
            }
            let text = format!(
                r#"{{"setup": {{"cores": 2, "date": "{date}", "workloads": [["aco", "pinlearn work aco"]]}}, "runs": [{}]}}"#,
                runs.join(",")
            );
            RealBench::parse(&text).expect("parses")
        };
        // B.2: static wins in both files, by 20 and 25 points: they agree.
        // C.2: the first file's static is 40% behind os, the second's 15%:
        // 25 points apart, beyond either's range.
        let first = bench("one", [("B.2", [2.0, 1.6, 1.9]), ("C.2", [2.0, 2.8, 2.0])]);
        let second = bench("two", [("B.2", [2.0, 1.5, 1.9]), ("C.2", [2.0, 2.3, 2.0])]);
        let found = reproduction(&[first.clone(), second.clone()]).expect("one machine");
        assert_eq!(found.len(), 2);
        for (file, date) in found.iter().zip(["one", "two"]) {
            assert_eq!(file.date.as_deref(), Some(date));
            assert_eq!(
                (file.cells, file.agree, file.same_winner, file.beyond_spread),
                (2, 1, 2, 1)
            );
        }
        // A third file like the second: each file meets the median of the
        // others' pooled runs. The first against the second and third (static
        // 2.3 s, 15% behind) still misses C.2 by 25 points; the second against
        // the first and third (static's median 2.55 s, 27.5% behind) by 12.5.
        let third = bench("three", [("B.2", [2.0, 1.5, 1.9]), ("C.2", [2.0, 2.3, 2.0])]);
        let found = reproduction(&[first.clone(), second.clone(), third.clone()]).expect("one machine");
        let agree: Vec<usize> = found.iter().map(|f| f.agree).collect();
        assert_eq!(agree, [1, 1, 1]);
        // With a fourth like them, the others' runs of 2.3 s outnumber the
        // first file's: the second, third and fourth agree in C.2.
        let fourth = bench("four", [("B.2", [2.0, 1.5, 1.9]), ("C.2", [2.0, 2.3, 2.0])]);
        let found = reproduction(&[first.clone(), second, third, fourth]).expect("one machine");
        let agree: Vec<usize> = found.iter().map(|f| f.agree).collect();
        assert_eq!(agree, [1, 2, 2, 2]);
        assert!(reproduction(&[first]).expect("nothing to compare").is_empty());
    }

    #[test]
    fn bad_bench_files_say_what_is_missing() {
        for (text, says) in [
            ("[1, 2]", "no \"setup\""),
            ("{\"setup\": {}}", "core count"),
            ("{\"setup\": {\"cores\": 2}}", "no \"runs\""),
            (
                "{\"setup\": {\"cores\": 2, \"load_session\": \"x\"}, \"runs\": []}",
                "neither own nor same",
            ),
            ("not json", "not a bench JSON file"),
        ] {
            let error = RealBench::parse(text).expect_err(text).to_string();
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn workloads_map_to_the_simulated_programs_that_wait_the_same_way() {
        let (aco, waits) = sim_workload("aco", "pinlearn work aco --iterations 3000").expect("maps");
        assert_eq!((aco.kind, waits), (WorkloadKind::Barrier, Some(6000.0)));
        assert!(aco.main_thread, "a `pinlearn work` program has its main thread");
        assert!(aco.heartbeats, "a `pinlearn work` program beats unless told not to");
        let (silent, _) = sim_workload("aco", "pinlearn work aco --iterations 3000 --no-heartbeats").expect("maps");
        assert!(!silent.heartbeats, "--no-heartbeats: it reports nothing");
        let (spin, waits) =
            sim_workload("aco-spin", "pinlearn work aco --sync spin-then-block --spin 1ms").expect("maps");
        assert_eq!((spin.kind, spin.spin_s), (WorkloadKind::BarrierSpin, Some(0.001)));
        assert_eq!(waits, Some(2.0 * ACO_DEFAULT_ITERATIONS));
        let (default_spin, _) = sim_workload("aco-spin", "pinlearn work aco --sync spin-then-block").expect("maps");
        assert_eq!(default_spin.spin_s, Some(ACO_DEFAULT_SPIN_S));
        let (pipeline, waits) =
            sim_workload("pipeline", "pinlearn work pipeline --stages 3,1,1 --items 200000").expect("maps");
        assert_eq!(
            (pipeline.kind, pipeline.stages, pipeline.queue_capacity, waits),
            (WorkloadKind::Pipeline, vec![3.0, 1.0, 1.0], 64, Some(200_000.0))
        );
        let (long_queues, _) = sim_workload("pipeline", "pinlearn work pipeline --capacity 4096").expect("maps");
        assert_eq!(long_queues.queue_capacity, 4096);
        let (binpack, waits) = sim_workload("binpack", "pinlearn work binpack --max-cycles 160").expect("maps");
        assert_eq!((binpack.kind, waits), (WorkloadKind::Barrier, Some(320.0)));
        let (stream, waits) = sim_workload("stream", "pinlearn work stream --size 0.5").expect("maps");
        assert_eq!((stream.kind, waits), (WorkloadKind::Independent, None));
        assert_eq!(stream.memory_intensity, 1.0, "stream is all memory");
        assert!(sim_workload("fib", "pinlearn work fib").is_err());
        assert!(sim_workload("pipeline", "pinlearn work pipeline --stages 3,x").is_err());
    }

    #[test]
    fn real_winners_are_faster_than_os_in_every_repeat_not_just_in_median() {
        let run = |scenario: &str, scheduler: &str, repeat: u64, seconds: f64| {
            format!(
                r#"{{"workload": "aco", "scenario": "{scenario}", "scheduler": "{scheduler}", "repeat": {repeat}, "threads": 4, "completion_s": {seconds}}}"#
            )
        };
        let mut runs = Vec::new();
        for (repeat, os, static_, learn) in [(0, 1.00, 0.95, 0.99), (1, 1.00, 0.96, 0.97), (2, 1.00, 1.01, 0.97)] {
            // B.1: static's median is 4% under os's, but one repeat is slower.
            runs.push(run("B.1", "os", repeat, os));
            runs.push(run("B.1", "static", repeat, static_));
            runs.push(run("B.1", "learn", repeat, learn));
            // B.2: both faster in every repeat; learn by more in median.
            runs.push(run("B.2", "os", repeat, 2.0 * os));
            runs.push(run("B.2", "static", repeat, 1.9 * static_.min(0.97)));
            runs.push(run("B.2", "learn", repeat, 1.6 * learn));
            // B.3: both faster in every repeat, within 1% of each other.
            runs.push(run("B.3", "os", repeat, 2.0 * os));
            runs.push(run("B.3", "static", repeat, 1.50));
            runs.push(run("B.3", "learn", repeat, 1.51));
        }
        let text = format!(
            r#"{{"setup": {{"cores": 2, "workloads": [["aco", "pinlearn work aco"]]}}, "runs": [{}]}}"#,
            runs.join(",")
        );
        let real = RealBench::parse(&text).expect("parses");
        let times = |scenario: &str| -> BTreeMap<&str, f64> {
            SCHEDULERS
                .iter()
                .map(|s| {
                    (
                        *s,
                        real.cells()[&("aco".to_string(), scenario.to_string(), s.to_string())].0,
                    )
                })
                .collect()
        };
        assert_eq!(
            winner(&times("B.1")).as_deref(),
            Some("static"),
            "by medians static wins"
        );
        assert_eq!(
            real_winners(&real, "aco", "B.1", &times("B.1")),
            ["os"],
            "one repeat says no"
        );
        assert_eq!(real_winners(&real, "aco", "B.2", &times("B.2")), ["learn"]);
        assert_eq!(
            real_winners(&real, "aco", "B.3", &times("B.3")),
            ["static", "learn"],
            "the runs cannot tell the two apart"
        );
        // Runs that name no repeat: the medians decide (static 4% and learn
        // 3% faster than os, within 2% of each other).
        let unpaired = RealBench {
            repeats: BTreeMap::new(),
            ..real.clone()
        };
        assert_eq!(
            real_winners(&unpaired, "aco", "B.1", &times("B.1")),
            ["static", "learn"]
        );
    }

    #[test]
    fn a_miss_beyond_the_spread_is_one_the_real_repeats_do_not_reach_within_the_tolerance() {
        let cell = |real: f64, sim: f64, range: Option<(f64, f64)>| CalibrationCell {
            workload: "aco".into(),
            scenario: "B.2".into(),
            threads: 4,
            real_os_s: 2.0,
            sim_os_s: Some(2.0),
            ratios: BTreeMap::from([("learn".to_string(), (Some(real), Some(sim)))]),
            real_range: range.map(|r| ("learn".to_string(), r)).into_iter().collect(),
            real_winners: vec!["os".into()],
            real_median_winner: "os".into(),
            sim_winner: Some("os".into()),
        };
        // 15 points from the real median, but inside what the repeats gave.
        let noisy = cell(0.95, 0.80, Some((0.78, 1.02)));
        assert!(!noisy.agrees() && !noisy.misses_beyond_spread());
        // 9 and 11 points below the lowest repeat.
        assert!(!cell(0.95, 0.81, Some((0.90, 1.02))).misses_beyond_spread());
        assert!(cell(0.95, 0.79, Some((0.90, 1.02))).misses_beyond_spread());
        assert!(
            cell(0.95, 1.13, Some((0.90, 1.02))).misses_beyond_spread(),
            "above the highest"
        );
        // Without repeats the real median is the range.
        assert!(cell(1.00, 0.85, None).misses_beyond_spread());
        assert!(!cell(1.00, 0.92, None).misses_beyond_spread());
    }

    #[test]
    fn each_cell_shows_the_lowest_and_highest_real_run_over_os_s_of_the_same_repeat() {
        let runs: Vec<String> = [(0, 1.0, 1.1), (1, 2.0, 1.6), (2, 1.5, 1.5)]
            .iter()
            .flat_map(|&(repeat, os, static_)| {
                [("os", os), ("static", static_)].map(|(scheduler, t)| {
                    format!(
                        r#"{{"workload": "aco", "scenario": "B.1", "scheduler": "{scheduler}", "repeat": {repeat}, "threads": 4, "completion_s": {t}}}"#
                    )
                })
            })
            .collect();
        let text = format!(
            r#"{{"setup": {{"cores": 2, "workloads": [["aco", "pinlearn work aco --iterations 300"]]}}, "runs": [{}]}}"#,
            runs.join(",")
        );
        let real = RealBench::parse(&text).expect("parses");
        let calibration =
            calibrate(&real, &Settings::default(), &MachineParams::default(), 1, None).expect("calibrates");
        let cell = &calibration.cells[0];
        assert_eq!(cell.real_range.get("static"), Some(&(0.8, 1.1)), "1.6 / 2 and 1.1 / 1");
        assert_eq!(cell.real_range.get("learn"), None, "no learn runs");
        assert!(calibration.table().contains("[-20..+10]"), "{}", calibration.table());
    }

    #[test]
    fn calibration_compares_the_cells_it_can_size_and_says_what_it_left_out() {
        let real = RealBench::parse(BENCH).expect("parses");
        let calibration =
            calibrate(&real, &Settings::default(), &MachineParams::default(), 1, None).expect("calibrates");
        // aco B.1 only: B.2 has no os time; stream and aco-spin have no runs; fib has no model.
        assert_eq!(calibration.cells.len(), 1);
        let cell = &calibration.cells[0];
        assert_eq!((cell.workload.as_str(), cell.scenario.as_str()), ("aco", "B.1"));
        let os = cell.sim_os_s.expect("os finished");
        assert!((os - 1.2).abs() < 0.05, "sized to the real os time without load: {os}");
        assert!(calibration.skipped.iter().any(|s| s.contains("fib")));
        // Three runs of os, none of the others: no range to show.
        assert!(cell.real_range.is_empty());
        let table = calibration.table();
        assert!(table.contains("of 1 cells agree"), "{table}");
        assert!(table.contains("outside the real repeats' range"), "{table}");
    }
}
