//! `pinlearn sim`: the command line of the simulator, and the loop over
//! scenarios × schedulers × seeds.
//!
//! ```text
//!   SimCommand ──validate──► Experiment (topology, workload, model, Settings)
//!        │                   scenarios, schedulers, seeds
//!        ▼
//!   prepare every scenario ─► runs (scenario, scheduler, seed) on --jobs threads
//!        │                    (results kept in run order: output is deterministic)
//!        ▼
//!   table on stdout, --json FILE, --plot FILE.svg (one scenario, first seed)
//! ```

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pinlearn_engine::{Metric, Settings, parse_duration};
use pinlearn_topology::Topology;
use serde::Serialize;

use crate::SimError;
use crate::experiment::{Experiment, Prepared, RunRecord, RunResult, Scheduler, scenario_fits};
use crate::machine::{MachineParams, SimMetric};
use crate::report;
use crate::scenario::Scenario;
use crate::workload::{WorkloadKind, WorkloadSpec};

/// `pinlearn sim`: run the engine's policies on a simulated NUMA machine.
#[derive(clap::Args, Debug, Clone)]
pub struct SimCommand {
    /// The machine: an hwloc synthetic string or an lstopo XML file
    #[arg(long, default_value = "node:2 core:14 pu:1")]
    pub topology: String,
    /// Application threads
    #[arg(long, default_value_t = 40)]
    pub threads: usize,
    /// The simulated program
    #[arg(long, value_enum, default_value_t = WorkloadKind::Independent)]
    pub workload: WorkloadKind,
    /// Scenarios, comma-separated: A.1 ... C.3 (A/B/C = 4/2/1 threads per core;
    /// .1/.2/.3 = no / constant / time-varying background load) and D (load
    /// alternating between nodes) [default: A.2,B.3,C.1 and D on 2+ nodes]
    #[arg(long, conflicts_with = "matrix")]
    pub scenarios: Option<String>,
    /// Run the whole matrix
    #[arg(long, value_parser = ["full"])]
    pub matrix: Option<String>,
    /// Schedulers, comma-separated: os, static, best-static, learn, learn:mean,
    /// learn:balanced, learn:balanced:GAMMA, learn:own
    #[arg(long, default_value = "os,static,best-static,learn")]
    pub schedulers: String,
    /// Runs per (scenario, scheduler), with seeds SEED, SEED+1, ... (SEED from --config, default 1)
    #[arg(long, default_value_t = 3)]
    pub seeds: u64,
    /// Simulated seconds the program takes on its idle cores (sizes the work)
    #[arg(long, default_value_t = 60.0)]
    pub duration: f64,
    /// Write one JSON record per (scenario, scheduler, seed) to FILE
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw the running-average speed over time of every scheduler (SVG)
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// The scenario to plot [default: the first]
    #[arg(long, value_name = "NAME")]
    pub plot_scenario: Option<String>,
    /// No progress bar or notes on stderr
    #[arg(long)]
    pub quiet: bool,
    /// Core-level period T_CPU, e.g. 50ms (overrides --config)
    #[arg(long)]
    pub interval: Option<String>,
    /// Engine settings file (TOML, as `pinlearn config` prints)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// What a speed sample measures [default: the settings' metric; auto = cpu]
    #[arg(long, value_enum)]
    pub metric: Option<SimMetric>,
    /// CFS weight (and relative work) of the threads, cycled, e.g. 4,3,3,2,2,1
    #[arg(long, value_name = "LIST")]
    pub weights: Option<String>,
    /// barrier-spin: spin this long before blocking, e.g. 2ms [default: spin until released]
    #[arg(long)]
    pub spin: Option<String>,
    /// pipeline: relative work per item of each stage
    #[arg(long, default_value = "2,1,1", value_name = "LIST")]
    pub stages: String,
    /// pipeline: queue capacity between stages, in items
    #[arg(long, default_value_t = 64)]
    pub queue_capacity: u64,
    /// Weight of the background load on a loaded core (2 = two CPU-bound threads)
    #[arg(long, default_value_t = 2.0)]
    pub background: f64,
    /// Remote/local memory cost ratio F: a thread with memory intensity m runs
    /// 1 + (F-1)·m times slower with its memory on another node
    #[arg(long, default_value_t = 2.0)]
    pub numa_factor: f64,
    /// Memory intensity m of every thread, in [0, 1]
    #[arg(long, default_value_t = 0.3)]
    pub memory_intensity: f64,
    /// Standard deviation of the multiplicative measurement noise
    #[arg(long, default_value_t = 0.05)]
    pub noise: f64,
    /// CPU time a thread loses when it changes core (4x when it changes node)
    #[arg(long, default_value = "250us")]
    pub migration_cost: String,
    /// Period of the modelled OS balancer within a node (4x across nodes)
    #[arg(long, default_value = "16ms")]
    pub balance_interval: String,
    /// Runs simulated in parallel [default: the CPUs available]
    #[arg(long)]
    pub jobs: Option<usize>,
}

/// Everything `run` needs, checked.
#[derive(Clone, Debug)]
pub struct Plan {
    pub experiment: Experiment,
    pub scenarios: Vec<Scenario>,
    pub schedulers: Vec<Scheduler>,
    pub seeds: Vec<u64>,
    pub plot_scenario: Option<Scenario>,
}

fn bad(message: impl Into<String>) -> SimError {
    SimError::BadInput(message.into())
}

fn positive_list(option: &str, text: &str) -> Result<Vec<f64>, SimError> {
    let values: Vec<f64> = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0))
        .collect::<Option<_>>()
        .ok_or_else(|| {
            bad(format!(
                "--{option} {text:?}: give positive numbers separated by commas, e.g. 2,1,1"
            ))
        })?;
    if values.is_empty() {
        return Err(bad(format!(
            "--{option} is empty: give positive numbers separated by commas, e.g. 2,1,1"
        )));
    }
    Ok(values)
}

fn seconds(option: &str, text: &str) -> Result<f64, SimError> {
    parse_duration(text)
        .map(|d| d.as_secs_f64())
        .map_err(|e| bad(format!("--{option}: {e}")))
}

impl SimCommand {
    /// Checks every option and builds the plan; errors are bad input.
    pub fn plan(&self) -> Result<Plan, SimError> {
        let topology = Topology::from_spec(&self.topology)?;
        if self.threads == 0 || self.threads > 100_000 {
            return Err(bad(format!(
                "--threads {} is out of range: use 1 to 100000",
                self.threads
            )));
        }
        if !(self.duration.is_finite() && self.duration > 0.0 && self.duration <= 1e6) {
            return Err(bad(format!(
                "--duration {} is out of range: give simulated seconds in (0, 1e6]",
                self.duration
            )));
        }
        if self.seeds == 0 {
            return Err(bad("--seeds must be at least 1"));
        }
        let checks = [
            (
                "background",
                self.background,
                self.background >= 0.0 && self.background.is_finite(),
                ">= 0",
            ),
            (
                "numa-factor",
                self.numa_factor,
                self.numa_factor >= 1.0 && self.numa_factor.is_finite(),
                ">= 1",
            ),
            (
                "memory-intensity",
                self.memory_intensity,
                (0.0..=1.0).contains(&self.memory_intensity),
                "in [0, 1]",
            ),
            ("noise", self.noise, (0.0..1.0).contains(&self.noise), "in [0, 1)"),
        ];
        if let Some((name, value, _, allowed)) = checks.iter().find(|c| !c.2) {
            return Err(bad(format!("--{name} {value} is out of range: it must be {allowed}")));
        }

        let mut settings = match &self.config {
            Some(path) => Settings::from_toml_file(path)?,
            None => Settings::default(),
        };
        if let Some(interval) = &self.interval {
            settings.interval = parse_duration(interval)?;
            settings.validate()?;
        }
        let metric = match self.metric {
            Some(metric) => metric,
            None => match settings.metric {
                Metric::Auto | Metric::Cpu => SimMetric::Cpu,
                Metric::Heartbeat => SimMetric::Heartbeat,
                Metric::Instructions => SimMetric::Instructions,
            },
        };
        let migration = seconds("migration-cost", &self.migration_cost)?;
        let balance = seconds("balance-interval", &self.balance_interval)?;
        if balance < 1e-4 {
            return Err(bad(format!(
                "--balance-interval {} is too short: use at least 100us",
                self.balance_interval
            )));
        }
        let params = MachineParams {
            numa_factor: self.numa_factor,
            noise: self.noise,
            core_migration_s: migration,
            node_migration_s: 4.0 * migration,
            balance_interval_s: balance,
            metric,
            ..MachineParams::default()
        };
        let workload = WorkloadSpec {
            kind: self.workload,
            threads: self.threads,
            weights: match &self.weights {
                Some(list) => positive_list("weights", list)?,
                None => vec![1.0],
            },
            duration_s: self.duration,
            spin_s: self.spin.as_deref().map(|s| seconds("spin", s)).transpose()?,
            stages: positive_list("stages", &self.stages)?,
            queue_capacity: self.queue_capacity.max(1),
            memory_intensity: self.memory_intensity,
        };

        let nodes = topology.nodes().len();
        let scenarios = match (&self.scenarios, &self.matrix) {
            (Some(list), _) => {
                let scenarios = Scenario::parse_list(list).map_err(|e| bad(e.to_string()))?;
                if scenarios.is_empty() {
                    return Err(bad("--scenarios is empty: give names such as A.1,B.2"));
                }
                scenarios
            }
            (None, Some(_)) => Scenario::all(nodes),
            (None, None) => Scenario::default_set(nodes),
        };
        for &scenario in &scenarios {
            scenario_fits(scenario, &topology)?;
        }
        let schedulers = Scheduler::parse_list(&self.schedulers).map_err(bad)?;
        if schedulers.is_empty() {
            return Err(bad("--schedulers is empty: give names such as os,learn"));
        }
        let plot_scenario = match &self.plot_scenario {
            Some(name) => {
                let scenario: Scenario = name
                    .parse()
                    .map_err(|e: crate::scenario::ParseScenarioError| bad(e.to_string()))?;
                if !scenarios.contains(&scenario) {
                    return Err(bad(format!(
                        "--plot-scenario {scenario} is not among the scenarios run"
                    )));
                }
                Some(scenario)
            }
            None => self.plot.as_ref().map(|_| scenarios[0]),
        };
        let seeds = (0..self.seeds).map(|k| settings.seed.wrapping_add(k)).collect();
        Ok(Plan {
            experiment: Experiment {
                topology,
                workload,
                params,
                settings,
                background_weight: self.background,
            },
            scenarios,
            schedulers,
            seeds,
            plot_scenario,
        })
    }
}

/// The JSON file: the model and every run.
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
            for &seed in &plan.seeds {
                tasks.push((scenario, scheduler, seed));
            }
        }
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
                    let Some(&(scenario, scheduler, seed)) = tasks.get(index) else {
                        break;
                    };
                    let result = plan.experiment.run(&prepared[scenario], scheduler, seed);
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

/// `pinlearn sim`: runs the plan, prints the table, writes the JSON and the
/// plot.
pub fn run(cmd: &SimCommand) -> Result<(), SimError> {
    let plan = cmd.plan()?;
    let jobs = cmd
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let started = Instant::now();
    let experiment = &plan.experiment;
    if !cmd.quiet {
        eprintln!(
            "pinlearn sim: {} ({} cores), {} {} threads, {} s nominal, metric {:?}, {} scenario(s) x {} scheduler(s) x {} seed(s)",
            experiment.topology.source(),
            experiment.topology.core_count(),
            experiment.workload.threads,
            experiment.workload.kind,
            experiment.workload.duration_s,
            experiment.params.metric,
            plan.scenarios.len(),
            plan.schedulers.len(),
            plan.seeds.len()
        );
    }
    let results = run_plan(&plan, jobs, !cmd.quiet)?;
    let records: Vec<&RunRecord> = results.iter().map(|r| &r.record).collect();
    let owned: Vec<RunRecord> = records.iter().map(|r| (*r).clone()).collect();
    let metric = format!("{:?}", experiment.params.metric).to_lowercase();
    print!("{}", report::table(&report::summarise(&owned), &metric));

    if let Some(path) = &cmd.json {
        let report = JsonReport {
            topology: experiment.topology.source(),
            workload: &experiment.workload,
            model: &experiment.params,
            background_weight: experiment.background_weight,
            interval_s: experiment.settings.interval.as_secs_f64(),
            numa_every: experiment.settings.numa_every(),
            settings: &experiment.settings,
            runs: records,
        };
        let text = serde_json::to_string_pretty(&report).expect("records serialise to JSON");
        std::fs::write(path, text + "\n").map_err(|source| SimError::Write {
            path: path.clone(),
            source,
        })?;
    }
    if let (Some(path), Some(scenario)) = (&cmd.plot, plan.plot_scenario) {
        let name = scenario.to_string();
        let first_seed = plan.seeds[0];
        let lines: Vec<(String, Vec<(f64, f64)>)> = results
            .iter()
            .filter(|r| r.record.scenario == name && r.record.seed == first_seed)
            .map(|r| (r.record.scheduler.clone(), r.series.clone()))
            .collect();
        let title = format!(
            "{name}: {} threads, {}, {} (seed {first_seed})",
            experiment.workload.threads,
            experiment.workload.kind,
            experiment.topology.source()
        );
        report::plot(path, &title, &format!("running average {metric} speed"), &lines).map_err(|reason| {
            SimError::Plot {
                path: path.clone(),
                reason,
            }
        })?;
    }
    if !cmd.quiet {
        eprintln!(
            "pinlearn sim: {} runs in {:.2} s",
            results.len(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
