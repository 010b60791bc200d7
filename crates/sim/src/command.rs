//! `pinlearn sim`: what it was asked (already parsed by the binary), the
//! checked plan, and the loop over scenarios × schedulers × seeds.
//!
//! ```text
//!   SimOptions ──plan()──► Plan: Experiment (topology, workload, model, Settings)
//!        │                 scenarios, schedulers, seeds     (every error here: bad input)
//!        │                 --dry-run: Plan::describe() and stop
//!        ▼
//!   prepare every scenario ─► runs (scenario, scheduler, seed) on `jobs` threads
//!        │                    (results kept in run order: output is deterministic)
//!        ▼
//!   RunRecords ─► summarise + summary_table (pinlearn-experiment) on stdout,
//!                 --json FILE|-, --plot FILE.svg (one scenario, first seed)
//!   --trace FILE: the plan must be one run; the engine writes its rows
//!                 (the CSV of `pinlearn run --trace`) as that run goes
//! ```

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pinlearn_engine::{Metric, PolicyChoice, Settings};
use pinlearn_experiment::{LoadSession, RunRecord, Scenario, Scheduler, summarise, summary_table};
use pinlearn_report::Output;
use pinlearn_topology::Topology;
use serde::Serialize;

use crate::SimError;
use crate::experiment::{Experiment, HORIZON_FACTOR, Prepared, RunResult};
use crate::machine::{MachineParams, SimMetric};
use crate::report;
use crate::workload::WorkloadSpec;

/// Engine periods × threads the simulator steps per second of wall time on
/// one core, measured on our 2-core machine (`pinlearn sim --topology
/// "node:2 core:14 pu:1" --threads 40`): a rough figure for `--dry-run`.
const THREAD_PERIODS_PER_SECOND: f64 = 2.0e6;

/// What the simulated program tells the manager of its progress, in words.
fn reports(workload: &WorkloadSpec) -> &'static str {
    if workload.heartbeats {
        "the program reports its progress (heartbeats)"
    } else {
        "the program reports nothing"
    }
}

/// What `pinlearn sim` was asked to do.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// The machine.
    pub topology: Topology,
    pub workload: WorkloadSpec,
    /// None: A.2, B.3, C.1 and D.
    pub scenarios: Option<Vec<Scenario>>,
    /// Run the whole matrix (A.1 ... C.3, D).
    pub full_matrix: bool,
    pub schedulers: Vec<Scheduler>,
    /// Runs per (scenario, scheduler), seeds SEED, SEED+1, ...
    pub seeds: u64,
    /// Engine settings (--config), with the flags applied.
    pub settings: Settings,
    /// What a speed sample measures; None: the settings' metric.
    pub metric: Option<Metric>,
    pub params: MachineParams,
    /// Weight of the background load (see `Experiment::background_weight`);
    /// None: 2 in the program's session, 1 in its own.
    pub background_weight: Option<f64>,
    pub json: Option<Output>,
    pub plot: Option<PathBuf>,
    pub plot_scenario: Option<Scenario>,
    /// One run's trace: a row per thread per period, as `pinlearn run
    /// --trace` writes it.
    pub trace: Option<PathBuf>,
    pub quiet: bool,
    /// Runs simulated in parallel.
    pub jobs: usize,
}

impl SimOptions {
    /// The defaults of `pinlearn sim` on `topology`.
    pub fn new(topology: Topology) -> Self {
        SimOptions {
            topology,
            workload: WorkloadSpec::default(),
            scenarios: None,
            full_matrix: false,
            schedulers: vec![
                Scheduler::policy(PolicyChoice::Os),
                Scheduler::policy(PolicyChoice::Static),
                Scheduler::BEST_STATIC,
                Scheduler::policy(PolicyChoice::Learn),
            ],
            seeds: 3,
            settings: Settings::default(),
            metric: None,
            params: MachineParams::default(),
            background_weight: None,
            json: None,
            plot: None,
            plot_scenario: None,
            trace: None,
            quiet: false,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// Everything `run` needs, checked.
#[derive(Clone, Debug)]
pub struct Plan {
    pub experiment: Experiment,
    pub scenarios: Vec<Scenario>,
    pub schedulers: Vec<Scheduler>,
    pub seeds: Vec<u64>,
    pub plot_scenario: Option<Scenario>,
    /// Where the one run's trace goes.
    pub trace: Option<PathBuf>,
}

fn bad(message: impl Into<String>) -> SimError {
    SimError::BadInput(message.into())
}

/// The default scenarios: where the OS should win (C.1), where learning
/// should (A.2), time-varying load (B.3), and the load moving (D).
fn default_scenarios() -> Vec<Scenario> {
    Scenario::parse_list("A.2,B.3,C.1,D").expect("built-in scenario names parse")
}

impl SimOptions {
    /// Checks every option and builds the plan; errors are bad input.
    pub fn plan(&self) -> Result<Plan, SimError> {
        let workload = &self.workload;
        if workload.threads == 0 || workload.threads > 100_000 {
            return Err(bad(format!(
                "--threads {} is out of range: use 1 to 100000",
                workload.threads
            )));
        }
        if !(workload.duration_s.is_finite() && workload.duration_s > 0.0 && workload.duration_s <= 1e6) {
            return Err(bad(format!(
                "--duration {}s is out of range: give simulated time in (0s, 1000000s]",
                workload.duration_s
            )));
        }
        if self.seeds == 0 {
            return Err(bad("--seeds must be at least 1"));
        }
        let params = &self.params;
        let background_weight = self.background_weight.unwrap_or(match params.load_session {
            LoadSession::Same => 2.0,
            LoadSession::Own => 1.0,
        });
        let checks = [
            (
                "background",
                background_weight,
                background_weight >= 0.0 && background_weight.is_finite(),
                ">= 0",
            ),
            (
                "numa-factor",
                params.numa_factor,
                params.numa_factor >= 1.0 && params.numa_factor.is_finite(),
                ">= 1",
            ),
            (
                "memory-intensity",
                workload.memory_intensity,
                (0.0..=1.0).contains(&workload.memory_intensity),
                "in [0, 1]",
            ),
            ("noise", params.noise, (0.0..1.0).contains(&params.noise), "in [0, 1)"),
            (
                "round-jitter",
                params.round_jitter,
                (0.0..1.0).contains(&params.round_jitter),
                "in [0, 1)",
            ),
        ];
        if let Some((name, value, _, allowed)) = checks.iter().find(|c| !c.2) {
            return Err(bad(format!("--{name} {value} is out of range: it must be {allowed}")));
        }
        if let Some(grain) = workload.grain_s.filter(|g| !(g.is_finite() && *g > 0.0)) {
            return Err(bad(format!(
                "--grain {grain}s is out of range: give how long a thread works between two waits, e.g. 500us"
            )));
        }
        if params.balance_interval_s < 1e-4 {
            return Err(bad(format!(
                "--balance-interval {}s is too short: use at least 100us",
                params.balance_interval_s
            )));
        }
        for (name, values) in [("weights", &workload.weights), ("stages", &workload.stages)] {
            if values.is_empty() || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
                return Err(bad(format!(
                    "--{name}: give positive numbers separated by commas, e.g. 2,1,1"
                )));
            }
        }
        self.settings.validate()?;
        let mut params = params.clone();
        params.metric = SimMetric::from(self.metric.unwrap_or(self.settings.metric));
        let scenarios = match (&self.scenarios, self.full_matrix) {
            (Some(list), _) => list.clone(),
            (None, true) => Scenario::full_matrix(),
            (None, false) => default_scenarios(),
        };
        if scenarios.is_empty() || self.schedulers.is_empty() {
            return Err(bad("nothing to run: give at least one scenario and one scheduler"));
        }
        let plot_scenario = match self.plot_scenario {
            Some(scenario) if !scenarios.contains(&scenario) => {
                return Err(bad(format!(
                    "--plot-scenario {scenario} is not among the scenarios run"
                )));
            }
            Some(scenario) => Some(scenario),
            None => self.plot.as_ref().map(|_| scenarios[0]),
        };
        if let Some(output) = &self.json {
            output.check_writable().map_err(bad)?;
        }
        if let Some(path) = &self.plot {
            Output::File(path.clone()).check_writable().map_err(bad)?;
        }
        if let Some(path) = &self.trace {
            let runs = scenarios.len() as u64 * self.schedulers.len() as u64 * self.seeds;
            if runs != 1 {
                return Err(bad(format!(
                    "--trace records one run, and these options make {runs}: give one scenario (--scenarios), \
                     one scheduler (--schedulers) and --seeds 1"
                )));
            }
            Output::File(path.clone()).check_writable().map_err(bad)?;
        }
        let seeds = (0..self.seeds).map(|k| self.settings.seed.wrapping_add(k)).collect();
        Ok(Plan {
            experiment: Experiment {
                topology: self.topology.clone(),
                workload: workload.clone(),
                params,
                settings: self.settings.clone(),
                background_weight,
            },
            scenarios,
            schedulers: self.schedulers.clone(),
            seeds,
            plot_scenario,
            trace: self.trace.clone(),
        })
    }
}

impl Plan {
    /// The plan in words, for `--dry-run`: the machine, every scenario's
    /// cores and load schedule, the runs and a rough estimate of the time.
    pub fn describe(&self, jobs: usize) -> String {
        let experiment = &self.experiment;
        let workload = &experiment.workload;
        let mut text = format!(
            "sim plan: {} ({} cores), {} {} threads, {} s nominal, metric {:?}, {}\nschedulers {}; seeds {:?}\n",
            experiment.topology.source(),
            experiment.topology.core_count(),
            workload.threads,
            workload.kind,
            workload.duration_s,
            experiment.params.metric,
            reports(workload),
            self.schedulers
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            self.seeds
        );
        for scenario in &self.scenarios {
            let cpus = experiment.cpus_for(*scenario);
            let cores_per_node: Vec<usize> = experiment
                .topology
                .nodes()
                .iter()
                .map(|node| node.cores.iter().filter(|core| core.is_subset(&cpus)).count())
                .filter(|&count| count > 0)
                .collect();
            let schedule = scenario.load_schedule(&cores_per_node, workload.duration_s, workload.duration_s);
            text += &format!(
                "  {scenario} ({}): CPUs {cpus}; load ({} session, weight {}) {}\n",
                scenario.describe(),
                experiment.params.load_session,
                experiment.background_weight,
                schedule.describe()
            );
        }
        let runs = self.scenarios.len() * self.schedulers.len() * self.seeds.len();
        let period_s = experiment.settings.interval.as_secs_f64();
        // A run lasts about its nominal time, more with load (up to the horizon).
        let thread_periods = runs as f64 * workload.threads as f64 * workload.duration_s / period_s;
        let seconds = thread_periods / THREAD_PERIODS_PER_SECOND / jobs.max(1) as f64;
        text += &format!(
            "{runs} runs on {jobs} thread(s), roughly {} of wall time (longer when loaded runs approach the horizon, {HORIZON_FACTOR} x the nominal time)\n",
            pinlearn_engine::format_duration(Duration::from_secs(seconds.ceil() as u64))
        );
        text
    }
}

/// The JSON document: the model and every run.
#[derive(Serialize)]
struct JsonReport<'a> {
    topology: &'a str,
    workload: &'a WorkloadSpec,
    model: &'a MachineParams,
    background_weight: f64,
    interval_s: f64,
    numa_every: u64,
    settings: &'a Settings,
    runs: Vec<&'a RunRecord>,
}

/// Runs every (scenario, scheduler, seed) of the plan, in run order.
pub fn run_plan(plan: &Plan, jobs: usize, progress: bool) -> Result<Vec<RunResult>, SimError> {
    let prepared: Vec<Prepared> = plan
        .scenarios
        .iter()
        .map(|&s| plan.experiment.prepare(s))
        .collect::<Result<_, _>>()?;
    let mut tasks = Vec::new();
    for scenario in 0..prepared.len() {
        for &scheduler in &plan.schedulers {
            for (repeat, &seed) in plan.seeds.iter().enumerate() {
                tasks.push((scenario, scheduler, repeat, seed));
            }
        }
    }
    // A plan that traces holds one run (`SimOptions::plan` checks).
    if let Some(path) = &plan.trace {
        let [(scenario, scheduler, repeat, seed)] = tasks.as_slice() else {
            return Err(bad(format!(
                "--trace records one run, and the plan holds {}",
                tasks.len()
            )));
        };
        let trace = pinlearn_engine::Trace::create(path)?;
        let result = plan
            .experiment
            .run_traced(&prepared[*scenario], *scheduler, *repeat, *seed, trace);
        return Ok(vec![result?]);
    }
    let bar = if progress {
        let bar = ProgressBar::with_draw_target(Some(tasks.len() as u64), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} runs {elapsed} {msg}") {
            bar.set_style(style);
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<RunResult, SimError>>>> = Mutex::new((0..tasks.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, tasks.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(scenario, scheduler, repeat, seed)) = tasks.get(index) else {
                        break;
                    };
                    let result = plan.experiment.run(&prepared[scenario], scheduler, repeat, seed);
                    bar.set_message(format!("{} {scheduler}", prepared[scenario].scenario));
                    bar.inc(1);
                    results.lock().unwrap_or_else(|e| e.into_inner())[index] = Some(result);
                }
            });
        }
    });
    bar.finish_and_clear();
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every task ran"))
        .collect()
}

/// `pinlearn sim`: runs the plan, prints the table (on stderr when `--json -`
/// takes stdout), writes the JSON and the plot; returns the records.
pub fn run(options: &SimOptions) -> Result<Vec<RunRecord>, SimError> {
    let plan = options.plan()?;
    let jobs = options.jobs.max(1);
    let started = Instant::now();
    let experiment = &plan.experiment;
    if !options.quiet {
        eprintln!(
            "pinlearn sim: {} ({} cores), {} {} threads, {} s nominal, metric {:?}, {}, {} scenario(s) x {} scheduler(s) x {} seed(s)",
            experiment.topology.source(),
            experiment.topology.core_count(),
            experiment.workload.threads,
            experiment.workload.kind,
            experiment.workload.duration_s,
            experiment.params.metric,
            reports(&experiment.workload),
            plan.scenarios.len(),
            plan.schedulers.len(),
            plan.seeds.len()
        );
    }
    let results = run_plan(&plan, jobs, !options.quiet)?;
    let records: Vec<RunRecord> = results.iter().map(|r| r.record.clone()).collect();
    let table = summary_table(&summarise(&records), experiment.workload.kind.name()).to_text();
    let note = "completion in simulated seconds; vs os: (scheduler - os) / os, negative = faster than the OS; \
                L/L*: load-model makespan of the final assignment over the optimum\n";
    if options.json.as_ref().is_some_and(Output::is_stdout) {
        if !options.quiet {
            eprint!("{table}{note}");
        }
    } else {
        print!("{table}{note}");
    }

    if let Some(output) = &options.json {
        let report = JsonReport {
            topology: experiment.topology.source(),
            workload: &experiment.workload,
            model: &experiment.params,
            background_weight: experiment.background_weight,
            interval_s: experiment.settings.interval.as_secs_f64(),
            numa_every: experiment.settings.numa_every(),
            settings: &experiment.settings,
            runs: records.iter().collect(),
        };
        let text = serde_json::to_string_pretty(&report).expect("records serialise to JSON");
        output.write(&text).map_err(SimError::Output)?;
    }
    if let (Some(path), Some(scenario)) = (&options.plot, plan.plot_scenario) {
        let name = scenario.to_string();
        let first_seed = plan.seeds[0];
        let lines: Vec<(String, Vec<(f64, f64)>)> = results
            .iter()
            .filter(|r| r.record.scenario == name && r.record.seed == Some(first_seed))
            .map(|r| (r.record.scheduler.clone(), r.series.clone()))
            .collect();
        let title = format!(
            "{name}: {} threads, {}, {} (seed {first_seed})",
            experiment.workload.threads,
            experiment.workload.kind,
            experiment.topology.source()
        );
        let metric = format!("{:?}", experiment.params.metric).to_lowercase();
        report::plot(path, &title, &format!("running average {metric} speed"), &lines).map_err(|reason| {
            SimError::Plot {
                path: path.clone(),
                reason,
            }
        })?;
    }
    if !options.quiet {
        eprintln!(
            "pinlearn sim: {} runs in {:.2} s",
            results.len(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(records)
}
