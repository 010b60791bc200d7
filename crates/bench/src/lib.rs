//! `pinlearn bench`: the papers' experiment matrix on the real machine,
//! every scheduler side by side with Linux, each run made through the real
//! `pinlearn` binary exactly as a user would make it.
//!
//! ```text
//!   BenchCommand ─► Plan::new: parse workloads, schedulers, scenarios; the cores
//!        │          (hwloc, --cpus, or --topology [--topology-map]); --bubbles and
//!        │          --preload checked; every error here is bad input (exit 2)
//!        ▼
//!   1. calibrate: each (workload, level) once, Linux alone, no manager, no load
//!        │        ─► run length (schedules time-varying loads, estimates the time left),
//!        │           worker thread names (best-static's thread classes), warm caches;
//!        │        with a memory-bound workload (stream), the memory bandwidth: its
//!        │        threads on the first core against the first node's cores
//!        ▼
//!   2. for each workload, for each scenario:
//!        │   best-static search: every distinct fixed pinning once, keep the fastest
//!        │   for repeat r, for scheduler in rotate(schedulers, r):   (interleaved)
//!        │        Runner::run: background load per LoadPlan + the workload ─► RunRecord
//!        ▼
//!   3. summarise ─► tables on stdout, --markdown, --json {"runs", "summary", ...},
//!                   --plot (bars per workload, speed lines per scenario)
//! ```
//!
//! Progress goes to stderr: a bar with the current run and the time left on
//! a terminal, one line per run otherwise (nothing with `--quiet`).

mod best_static;
mod export;
mod results;
mod runner;
mod workload;

pub use pinlearn_experiment::LoadSession;
pub use results::{BenchResults, BestStaticRecord, CalibrationRecord, MemoryBandwidth, Setup};
pub use workload::{BenchWorkload, Launch, PRESETS, Preset};

use best_static::Candidates;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pinlearn_engine::PolicyChoice;
use pinlearn_engine::preload::Preload;
use pinlearn_experiment::{Level, LoadSchedule, RunRecord, Scenario, Scheduler, SchedulerKind, interleaved, summarise};
use pinlearn_report::Output;
use pinlearn_topology::{CpuSet, Topology};
use runner::{Measured, Placement, RunSpec, Runner};
use std::collections::{BTreeSet, HashMap};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

/// What `pinlearn bench` was asked to do: workloads x scenarios x
/// schedulers, repeated and interleaved. The binary parses the flags.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Preset names (aco, aco-spin, ...); empty: every preset.
    pub workloads: Vec<String>,
    /// Arguments for `pinlearn work NAME` replacing the preset's (one workload only).
    pub workload_args: Option<String>,
    /// Multiply each preset's amount of work by this factor.
    pub scale: Option<f64>,
    /// The workloads report no heartbeats (`pinlearn work --no-heartbeats`):
    /// pinlearn sees them as unmodified programs.
    pub no_heartbeats: bool,
    /// Any program as the one workload instead of the presets (a command
    /// line, split as a shell would).
    pub command: Option<String>,
    /// The environment variable that tells `command` its thread count.
    pub threads_env: String,
    /// None: the matrix's (or os, static, learn).
    pub schedulers: Option<Vec<Scheduler>>,
    /// None: the matrix's (or the quick matrix).
    pub scenarios: Option<Vec<Scenario>>,
    pub matrix: Option<Matrix>,
    /// Runs per scheduler and scenario.
    pub repeat: usize,
    /// Only these CPUs, within the bench's own.
    pub cpus: Option<CpuSet>,
    /// A `pinlearn run --config` file for every managed run.
    pub config: Option<PathBuf>,
    /// A rules file (`pinlearn run --bubbles`) for the runs of `bubbles`
    /// and `bubbles+learn`.
    pub bubbles: Option<PathBuf>,
    /// `pinlearn run --preload`: `heartbeats` for every managed run,
    /// `threads` (the thread tree as bubbles) for `bubbles` and
    /// `bubbles+learn`, the only policies that read it.
    pub preload: Option<Preload>,
    /// The machine as an hwloc synthetic description or lstopo XML file
    /// (`pinlearn run --topology`): the scenarios' cores and nodes, and
    /// every managed run's.
    pub topology: Option<String>,
    /// The real CPUs a synthetic `topology`'s PUs stand for.
    pub topology_map: Option<CpuSet>,
    pub load_session: LoadSession,
    /// best-static tries at most this many distinct pinnings per scenario.
    pub best_static_max: usize,
    pub json: Option<Output>,
    pub markdown: Option<Output>,
    /// SVG plots: PREFIX-WORKLOAD-times.svg, PREFIX-WORKLOAD-SCENARIO-speed.svg.
    pub plot: Option<PathBuf>,
    /// No progress on stderr.
    pub quiet: bool,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            workloads: Vec::new(),
            workload_args: None,
            scale: None,
            no_heartbeats: false,
            command: None,
            threads_env: "OMP_NUM_THREADS".into(),
            schedulers: None,
            scenarios: None,
            matrix: None,
            repeat: 3,
            cpus: None,
            config: None,
            bubbles: None,
            preload: None,
            topology: None,
            topology_map: None,
            load_session: LoadSession::Own,
            best_static_max: 16,
            json: None,
            markdown: None,
            plot: None,
            quiet: false,
        }
    }
}

/// A predefined matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Matrix {
    /// C.1 and C.2 for every workload, os and learn: a few minutes on 2 cores.
    Quick,
    /// A.1 ... C.3 and D for every workload, plus best-static: under an hour on 2 cores.
    Full,
}

impl FromStr for Matrix {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "quick" => Ok(Matrix::Quick),
            "full" => Ok(Matrix::Full),
            other => Err(format!("unknown matrix {other:?}: use quick or full")),
        }
    }
}

/// What went wrong; `is_bad_input` tells the CLI to exit with status 2.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    BadInput(String),
    #[error("run {run} failed: {reason}")]
    RunFailed { run: String, reason: String },
    #[error("{0}")]
    Output(String),
    #[error(transparent)]
    Plot(#[from] pinlearn_report::ReportError),
    #[error("{0}")]
    Machine(String),
}

impl BenchError {
    pub fn is_bad_input(&self) -> bool {
        matches!(self, BenchError::BadInput(_))
    }
}

/// Checks the options and plans the bench without running anything:
/// `pinlearn bench --dry-run` prints [`BenchPlan::describe`].
pub fn plan(options: &BenchOptions, pinlearn_exe: &Path) -> Result<BenchPlan, BenchError> {
    Plan::new(options, pinlearn_exe).map(BenchPlan)
}

/// `program` names an executable file: a path, or a name found in PATH (as
/// the shell and `Command` look it up).
fn runnable_program(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &Path| {
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return executable(Path::new(program));
    }
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| executable(&dir.join(program))))
}

/// A checked bench, ready to run.
pub struct BenchPlan(Plan);

impl BenchPlan {
    /// Cells, schedulers, repeats, every scenario's load schedule on these
    /// CPUs and a rough estimate of the time (from the presets' run times
    /// measured on a 2-core machine, scaled by `--scale`).
    pub fn describe(&self) -> String {
        self.0.describe()
    }
}

/// Runs the bench described by `options`, running `pinlearn_exe` (the CLI
/// passes `std::env::current_exe()`) for every run; prints the tables on
/// stdout (on stderr when `--json -` or `--markdown -` take stdout) and
/// writes the exports.
pub fn run(options: &BenchOptions, pinlearn_exe: &Path) -> Result<BenchResults, BenchError> {
    let plan = Plan::new(options, pinlearn_exe)?;
    let (results, traces) = plan.execute()?;
    let stdout_taken = [&options.json, &options.markdown]
        .into_iter()
        .flatten()
        .any(Output::is_stdout);
    if stdout_taken {
        if !options.quiet {
            eprint!("{}", export::to_text(&results));
        }
    } else {
        print!("{}", export::to_text(&results));
    }
    if let Some(output) = &options.json {
        output.write(&export::to_json(&results)).map_err(BenchError::Output)?;
    }
    if let Some(output) = &options.markdown {
        output
            .write(&export::to_markdown(&results))
            .map_err(BenchError::Output)?;
    }
    if let Some(prefix) = &options.plot {
        let written = export::write_plots(&results, prefix, &traces.paths)?;
        if !options.quiet {
            for path in written {
                eprintln!("bench: wrote {}", path.display());
            }
        }
    }
    Ok(results)
}

/// The first `model name` of /proc/cpuinfo's text (x86 has one per CPU;
/// others may have none).
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name" && !value.trim().is_empty()).then(|| value.trim().to_string())
    })
}

/// The machine the bench runs on: the one detected, or `--topology` (a
/// synthetic one mapped onto real CPUs with `--topology-map`, or lstopo
/// XML) within the bench's own CPUs.
fn bench_topology(options: &BenchOptions) -> Result<Topology, BenchError> {
    let detected =
        || Topology::detect().map_err(|e| BenchError::Machine(format!("cannot read the machine topology: {e}")));
    let Some(spec) = &options.topology else {
        if options.topology_map.is_some() {
            return Err(BenchError::BadInput(
                "--topology-map says which real CPUs a --topology's PUs are: give the --topology too".into(),
            ));
        }
        return detected();
    };
    if options.cpus.is_some() {
        return Err(BenchError::BadInput(
            "--cpus and --topology both choose the CPUs: with a --topology, its --topology-map says which".into(),
        ));
    }
    let described = Topology::from_spec_onto(spec, options.topology_map.as_ref()).map_err(|e| match e {
        pinlearn_topology::TopologyError::NeedsMap { pus, .. } => BenchError::BadInput(format!(
            "--topology {spec:?} is synthetic: add --topology-map LIST to say which real CPUs its {pus} PUs are"
        )),
        e => BenchError::BadInput(format!("--topology: {e}")),
    })?;
    let real = detected()?.cpus();
    let outside = described.cpus().difference(&real);
    if !outside.is_empty() {
        return Err(BenchError::BadInput(format!(
            "--topology {spec:?}: CPUs {outside} are not among the bench's own ({real})"
        )));
    }
    Ok(described)
}

/// `--bubbles` and `--preload`: each with a scheduler that reads it, the
/// rules file valid on `machine`, the preload library present.
fn check_bubble_inputs(
    options: &BenchOptions,
    schedulers: &[Scheduler],
    machine: &Topology,
    exe: &Path,
) -> Result<(), BenchError> {
    let bubble_schedulers = schedulers.iter().any(|s| match s.kind {
        SchedulerKind::Policy(policy) => policy.places_bubbles(),
        SchedulerKind::BestStatic => false,
    });
    if let Some(path) = &options.bubbles {
        if !bubble_schedulers {
            return Err(BenchError::BadInput(
                "--bubbles is read by the bubbles and bubbles+learn schedulers: add one of them to --schedulers".into(),
            ));
        }
        let rules =
            pinlearn_engine::bubbles::BubbleRules::read(path).map_err(|e| BenchError::BadInput(e.to_string()))?;
        rules
            .check_levels(&pinlearn_engine::Places::new(machine).tree())
            .map_err(|e| BenchError::BadInput(e.to_string()))?;
    }
    if options.preload.is_some_and(|p| p.threads) {
        if !bubble_schedulers {
            return Err(BenchError::BadInput(
                "--preload threads gives the bubbles and bubbles+learn schedulers the thread tree: add one of them \
                 to --schedulers"
                    .into(),
            ));
        }
        if options.bubbles.is_some() {
            return Err(BenchError::BadInput(
                "--preload threads and --bubbles both say what the bubbles are: give one of them".into(),
            ));
        }
    }
    if options.preload.is_some() {
        // Every managed run loads it: missing, none of them could start.
        pinlearn_engine::preload::library(exe).map_err(|e| BenchError::BadInput(e.to_string()))?;
    }
    Ok(())
}

/// Everything checked and decided before the first run.
struct Plan {
    workloads: Vec<BenchWorkload>,
    schedulers: Vec<Scheduler>,
    scenarios: Vec<Scenario>,
    repeat: usize,
    runner: Runner,
    /// Cores per NUMA node of the bench's CPUs (the scenarios' load is per node).
    cores_per_node: Vec<usize>,
    best_static_max: usize,
    keep_traces: bool,
    quiet: bool,
    setup: Setup,
}

/// Traces of the runs (when plotting), aligned with `BenchResults::runs`.
struct Traces {
    _dir: Option<tempfile::TempDir>,
    paths: Vec<Option<PathBuf>>,
}

impl Plan {
    fn new(options: &BenchOptions, exe: &Path) -> Result<Self, BenchError> {
        let mut workloads = match &options.command {
            Some(command) => {
                if !options.workloads.is_empty() || options.workload_args.is_some() || options.scale.is_some() {
                    return Err(BenchError::BadInput(
                        "--command runs one program of your own: drop --workload, --workload-args and --scale \
                         (size the program's work with its own arguments)"
                            .into(),
                    ));
                }
                let workload = BenchWorkload::command(command, &options.threads_env)?;
                if let Launch::Command { argv, .. } = &workload.launch
                    && !runnable_program(&argv[0])
                {
                    return Err(BenchError::BadInput(format!(
                        "--command: {} is not a program here (give its path, or a name found in PATH)",
                        argv[0]
                    )));
                }
                vec![workload]
            }
            None => workload::select(&options.workloads, options.workload_args.as_deref(), options.scale)?,
        };
        if options.no_heartbeats {
            for workload in &mut workloads {
                if let Launch::Work(args) = &mut workload.launch {
                    args.push("--no-heartbeats".into());
                }
            }
        }
        let scenarios = match (&options.scenarios, options.matrix) {
            (Some(list), _) => list.clone(),
            (None, Some(Matrix::Full)) => Scenario::full_matrix(),
            (None, _) => Scenario::quick_matrix(),
        };
        let policy = |choice| Scheduler::policy(choice);
        let schedulers = match (&options.schedulers, options.matrix) {
            (Some(list), _) => list.clone(),
            (None, Some(Matrix::Full)) => vec![
                policy(PolicyChoice::Os),
                policy(PolicyChoice::Static),
                policy(PolicyChoice::Learn),
                Scheduler::BEST_STATIC,
            ],
            (None, Some(Matrix::Quick)) => vec![policy(PolicyChoice::Os), policy(PolicyChoice::Learn)],
            (None, None) => vec![
                policy(PolicyChoice::Os),
                policy(PolicyChoice::Static),
                policy(PolicyChoice::Learn),
            ],
        };
        if options.command.is_some() && schedulers.contains(&Scheduler::BEST_STATIC) {
            return Err(BenchError::BadInput(
                "best-static pins a workload's threads by their names, which a --command's threads need not have \
                 apart: use static (one thread per core, round robin) with --command"
                    .into(),
            ));
        }
        if scenarios.is_empty() || schedulers.is_empty() {
            return Err(BenchError::BadInput(
                "nothing to run: give at least one scenario and one scheduler".into(),
            ));
        }
        if options.repeat == 0 || options.repeat > 1000 {
            return Err(BenchError::BadInput(format!(
                "--repeat {} is out of range: use 1 to 1000",
                options.repeat
            )));
        }
        if options.best_static_max == 0 {
            return Err(BenchError::BadInput("--best-static-max must be at least 1".into()));
        }
        for output in [&options.json, &options.markdown].into_iter().flatten() {
            output.check_writable().map_err(BenchError::BadInput)?;
        }
        if let Some(prefix) = &options.plot {
            Output::File(prefix.clone())
                .check_writable()
                .map_err(BenchError::BadInput)?;
        }
        if !exe.is_file() {
            return Err(BenchError::Machine(format!(
                "the pinlearn binary {} does not exist",
                exe.display()
            )));
        }

        let machine = bench_topology(options)?;
        check_bubble_inputs(options, &schedulers, &machine, exe)?;
        let restricted = match &options.cpus {
            Some(cpus) => {
                let outside = cpus.difference(&machine.cpus());
                if cpus.is_empty() || !outside.is_empty() {
                    return Err(BenchError::BadInput(format!(
                        "--cpus {cpus}: give CPUs within the bench's own ({})",
                        machine.cpus()
                    )));
                }
                Some(cpus.clone())
            }
            None => None,
        };
        if let Some(path) = &options.config {
            pinlearn_engine::Settings::from_toml_file(path)
                .map_err(|e| BenchError::BadInput(format!("--config: {e}")))?;
        }
        let topology = match &restricted {
            Some(cpus) => machine
                .restrict(cpus)
                .map_err(|e| BenchError::BadInput(format!("--cpus: {e}")))?,
            None => machine,
        };
        let cores: Vec<CpuSet> = topology.cores().cloned().collect();
        let cores_per_node: Vec<usize> = topology.nodes().iter().map(|n| n.cores.len()).collect();
        let runner = Runner {
            exe: exe.to_path_buf(),
            cpus: restricted.or_else(|| options.topology.as_ref().map(|_| topology.cpus())),
            cores: cores.clone(),
            own_session: options.load_session == LoadSession::Own,
            config: options.config.clone(),
            bubbles: options.bubbles.clone(),
            preload: options.preload,
            topology: options
                .topology
                .clone()
                .map(|spec| (spec, options.topology_map.clone())),
        };
        let setup = Setup {
            date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            command: shell_words::join(std::env::args()),
            pinlearn: exe.display().to_string(),
            cpus: topology.cpus().to_string(),
            cores: cores.len(),
            cores_per_node: cores_per_node.clone(),
            load_generator: "pinlearn load (one spinning thread pinned to each CPU)".into(),
            load_session: options.load_session.name().into(),
            autogroup: std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
                .ok()
                .map(|s| s.trim().to_string()),
            cpu_model: std::fs::read_to_string("/proc/cpuinfo")
                .ok()
                .and_then(|cpuinfo| cpu_model(&cpuinfo)),
            last_level_cache_mib: Topology::detect_last_level_cache_bytes().map(|bytes| bytes >> 20),
            memory_bandwidth: None,
            repeat: options.repeat,
            schedulers: schedulers.iter().map(ToString::to_string).collect(),
            scenarios: scenarios.iter().map(ToString::to_string).collect(),
            workloads: workloads.iter().map(|w| (w.name.clone(), w.command_line())).collect(),
        };
        Ok(Plan {
            workloads,
            schedulers,
            scenarios,
            repeat: options.repeat,
            runner,
            cores_per_node,
            best_static_max: options.best_static_max,
            keep_traces: options.plot.is_some(),
            quiet: options.quiet,
            setup,
        })
    }

    fn cores(&self) -> usize {
        self.runner.cores.len()
    }

    /// The plan in words, for `--dry-run`.
    fn describe(&self) -> String {
        let cores = self.cores();
        let mut text = format!(
            "bench plan: CPUs {} ({cores} cores, per node {:?}), {} repeats, schedulers {}\n",
            self.setup.cpus,
            self.cores_per_node,
            self.repeat,
            self.setup.schedulers.join(", ")
        );
        let managed = self
            .schedulers
            .iter()
            .filter(|s| s.kind != SchedulerKind::BestStatic)
            .count();
        let mut estimate = 0.0;
        let mut runs = 0;
        let mut unknown = Vec::new();
        for workload in &self.workloads {
            text += &format!("{}: {}\n", workload.name, workload.command_line());
            if workload.expected_s.is_none() {
                text += "  (its run length is measured by its calibration run: load times below are for a 1 s run)\n";
                unknown.push(workload.name.as_str());
            }
            for scenario in &self.scenarios {
                let threads = scenario.threads_for(cores);
                let nominal = workload.expected_s.unwrap_or(1.0);
                let schedule = scenario.load_schedule(&self.cores_per_node, nominal, 20.0 * nominal);
                let shown: Vec<String> = schedule
                    .phases()
                    .iter()
                    .take(4)
                    .map(|phase| {
                        let cpus = phase
                            .cores
                            .iter()
                            .fold(CpuSet::new(), |all, &c| all.union(&self.runner.cores[c]));
                        if cpus.is_empty() {
                            format!("from {:.1} s: none", phase.start_s)
                        } else {
                            format!("from {:.1} s: CPUs {cpus}", phase.start_s)
                        }
                    })
                    .collect();
                let more = if schedule.phases().len() > 4 { "; ..." } else { "" };
                text += &format!(
                    "  {scenario} ({}): {threads} threads; load {}{more}\n",
                    scenario.describe(),
                    shown.join("; ")
                );
                let best_static = self.schedulers.len() > managed;
                let cell_runs = managed * self.repeat
                    + if best_static {
                        self.repeat + self.best_static_max
                    } else {
                        0
                    };
                runs += cell_runs;
                estimate += cell_runs as f64 * workload.expected_s.unwrap_or(0.0);
            }
            let levels: BTreeSet<Level> = self.scenarios.iter().map(|s| s.level).collect();
            runs += levels.len();
            estimate += levels.len() as f64 * workload.expected_s.unwrap_or(0.0);
        }
        if let Some(workload) = self.workloads.iter().find(|w| w.memory_bound) {
            let seconds = workload.expected_s.unwrap_or(0.0);
            text += &format!(
                "{}: the memory bandwidth, {} runs with its threads on the first core, interleaved with as many on the first node's cores\n",
                workload.name,
                self.repeat.max(1)
            );
            runs += self.bandwidth_runs();
            // Alone on one core it takes up to a node's cores times as long.
            let node_cores = self.cores_per_node.first().copied().unwrap_or(1) as f64;
            estimate += seconds * (node_cores + 1.0) * self.repeat.max(1) as f64;
        }
        let time = pinlearn_engine::format_duration(Duration::from_secs(estimate.round() as u64));
        text += &if unknown.is_empty() {
            format!(
                "{runs} runs at most (calibration included), about {time} of run time without load \
                 (preset times measured on 2 cores; loaded runs take longer)\n"
            )
        } else {
            format!(
                "{runs} runs at most (calibration included); their time depends on how long {} runs\n",
                unknown.join(", ")
            )
        };
        text
    }

    /// The threads of a run at `level` on the bench's cores, as the
    /// scenarios of that level have them.
    fn threads_at(&self, level: Level) -> usize {
        Scenario {
            level,
            load: pinlearn_experiment::Load::None,
        }
        .threads_for(self.cores())
    }

    /// Runs that measure the memory bandwidth: `--repeat` on one core and
    /// as many on the first node (`measure_memory_bandwidth`).
    fn bandwidth_runs(&self) -> usize {
        if self.workloads.iter().any(|w| w.memory_bound) {
            2 * self.repeat.max(1)
        } else {
            0
        }
    }

    fn levels(&self) -> Vec<Level> {
        let levels: BTreeSet<Level> = self.scenarios.iter().map(|s| s.level).collect();
        levels.into_iter().collect()
    }

    fn execute(self) -> Result<(BenchResults, Traces), BenchError> {
        let levels = self.levels();
        let calibration_runs = self.workloads.len() * levels.len() + self.bandwidth_runs();
        let mut progress = Progress::new(self.quiet, "calibrating", calibration_runs as u64);
        let calibration = self.calibrate(&levels, &mut progress)?;
        let searches = self.best_static_searches(&calibration);
        let (total_runs, expected_total) = self.expected_work(&calibration, &searches);
        progress.switch_to_time(total_runs, expected_total);

        let trace_dir = if self.keep_traces {
            Some(
                tempfile::tempdir()
                    .map_err(|e| BenchError::Machine(format!("cannot create a temporary directory: {e}")))?,
            )
        } else {
            None
        };
        let mut measured = MatrixRuns::default();
        for (w, workload) in self.workloads.iter().enumerate() {
            for &scenario in &self.scenarios {
                let length = calibration.lengths[&(w, scenario.level)];
                let cell = Cell {
                    workload,
                    scenario,
                    threads: scenario.threads_for(self.cores()),
                    length,
                    // Phases far past any run's end: a loaded run lasts longer than `length`.
                    load: scenario.load_schedule(&self.cores_per_node, length, 100.0 * length.max(1.0)),
                };
                let chosen = match searches.get(&(w, scenario)) {
                    Some(search) => {
                        let (record, chosen) = self.search_best_static(&cell, search, &mut progress)?;
                        measured.best_static.push(record);
                        chosen
                    }
                    None => None,
                };
                self.measure_cell(&cell, chosen.as_ref(), trace_dir.as_ref(), &mut progress, &mut measured)?;
            }
        }
        progress.done();
        let summary = summarise(&measured.runs);
        let mut setup = self.setup;
        setup.memory_bandwidth = calibration.memory_bandwidth;
        Ok((
            BenchResults {
                setup,
                calibration: calibration.records,
                best_static: measured.best_static,
                runs: measured.runs,
                summary,
            },
            Traces {
                _dir: trace_dir,
                paths: measured.trace_paths,
            },
        ))
    }

    /// Step 1: each (workload, level) once, Linux alone, no manager, no load.
    fn calibrate(&self, levels: &[Level], progress: &mut Progress) -> Result<Calibration, BenchError> {
        let linux_alone = HashMap::new();
        let mut calibration = Calibration::default();
        for (w, workload) in self.workloads.iter().enumerate() {
            for &level in levels {
                let threads = self.threads_at(level);
                let label = format!("{} {} calibration", workload.name, level.letter());
                let measured = self.run_without_load(workload, level, &linux_alone, label, progress)?;
                calibration.lengths.insert((w, level), measured.wall_s);
                calibration.names.insert((w, level), measured.worker_names.clone());
                calibration.records.push(CalibrationRecord {
                    workload: workload.name.clone(),
                    level: level.letter().to_string(),
                    threads,
                    wall_s: measured.wall_s,
                    worker_threads: measured.worker_names,
                });
            }
        }
        calibration.memory_bandwidth = self.measure_memory_bandwidth(&calibration, levels, progress)?;
        Ok(calibration)
    }

    /// One run of `workload` at `level` without load or manager, its
    /// threads pinned by name as `pins` says (empty: Linux alone).
    fn run_without_load(
        &self,
        workload: &BenchWorkload,
        level: Level,
        pins: &HashMap<String, CpuSet>,
        label: String,
        progress: &mut Progress,
    ) -> Result<Measured, BenchError> {
        progress.start(&label);
        let measured = self.runner.run(&RunSpec {
            label: label.clone(),
            workload,
            threads: self.threads_at(level),
            placement: Placement::Unmanaged(pins),
            load: Scenario {
                level,
                load: pinlearn_experiment::Load::None,
            }
            .load_schedule(&self.cores_per_node, 0.0, 0.0),
            trace: None,
        })?;
        progress.finish(&label, 1.0, measured.wall_s);
        Ok(measured)
    }

    /// The first node's memory bandwidth, with the first memory-bound
    /// workload at the level with the fewest threads per core: `--repeat`
    /// pairs of runs, interleaved, its threads (by the names its calibration
    /// run saw) on the first core, then on the first node's cores, Linux
    /// placing them within each; the medians' ratio. `None` without such a
    /// workload.
    fn measure_memory_bandwidth(
        &self,
        calibration: &Calibration,
        levels: &[Level],
        progress: &mut Progress,
    ) -> Result<Option<MemoryBandwidth>, BenchError> {
        let Some((w, workload)) = self.workloads.iter().enumerate().find(|(_, w)| w.memory_bound) else {
            return Ok(None);
        };
        let Some(&level) = levels.iter().min_by_key(|l| l.threads_per_core()) else {
            return Ok(None);
        };
        let Some(first_core) = self.runner.cores.first() else {
            return Ok(None);
        };
        let node_cores = self.cores_per_node.first().copied().unwrap_or(0).min(self.cores());
        let node_cpus = self.runner.cores[..node_cores]
            .iter()
            .fold(CpuSet::new(), |all, core| all.union(core));
        let names = &calibration.names[&(w, level)];
        let mut one_core_s = Vec::new();
        let mut node_s = Vec::new();
        for repeat in 1..=self.repeat.max(1) {
            for (cpus, what, times) in [
                (first_core, "one core", &mut one_core_s),
                (&node_cpus, "one node", &mut node_s),
            ] {
                let label = format!("{} memory bandwidth, {what} #{repeat}", workload.name);
                let pins: HashMap<String, CpuSet> = names.iter().map(|name| (name.clone(), cpus.clone())).collect();
                times.push(self.run_without_load(workload, level, &pins, label, progress)?.wall_s);
            }
        }
        let median = |times: &[f64]| pinlearn_report::stats(times).map_or(f64::NAN, |s| s.median);
        Ok(Some(MemoryBandwidth {
            workload: workload.name.clone(),
            threads: self.threads_at(level),
            cores_worth: median(&one_core_s) / median(&node_s),
            one_core_s,
            node_s,
            node_cores,
        }))
    }

    /// best-static's candidates per (workload, scenario), from the worker
    /// names the calibration saw (empty when best-static is not asked for).
    fn best_static_searches(&self, calibration: &Calibration) -> Searches {
        let mut searches = Searches::new();
        if !self.schedulers.contains(&Scheduler::BEST_STATIC) {
            return searches;
        }
        for w in 0..self.workloads.len() {
            for &scenario in &self.scenarios {
                let classes = best_static::classes(&calibration.names[&(w, scenario.level)]);
                let sizes: Vec<usize> = classes.iter().map(|c| c.members.len()).collect();
                let groups = scenario.exchangeable_cores(&self.cores_per_node);
                let found = best_static::candidates(&sizes, self.cores(), &groups, self.best_static_max)
                    .map(|assignments| Candidates { classes, assignments })
                    .map_err(|e| e.to_string());
                searches.insert((w, scenario), found);
            }
        }
        searches
    }

    /// The number of runs left and their expected seconds, so that the time
    /// left is known from the start.
    fn expected_work(&self, calibration: &Calibration, searches: &Searches) -> (usize, f64) {
        let mut expected_total = 0.0;
        let mut total_runs = 0;
        for w in 0..self.workloads.len() {
            for &scenario in &self.scenarios {
                let per_run = calibration.lengths[&(w, scenario.level)];
                let tried = match searches.get(&(w, scenario)) {
                    Some(Ok(found)) => found.assignments.len(),
                    _ => 0,
                };
                let runs = self
                    .schedulers
                    .iter()
                    .filter(|s| s.kind != SchedulerKind::BestStatic || tried > 0)
                    .count()
                    * self.repeat
                    + tried;
                expected_total += per_run * runs as f64;
                total_runs += runs;
            }
        }
        (total_runs, expected_total)
    }

    /// Step 2a: every candidate pinning of a cell once; the fastest is
    /// best-static's (its description and pin map).
    fn search_best_static(
        &self,
        cell: &Cell,
        search: &Result<Candidates, String>,
        progress: &mut Progress,
    ) -> Result<(BestStaticRecord, Option<ChosenPinning>), BenchError> {
        let mut record = BestStaticRecord {
            workload: cell.workload.name.clone(),
            scenario: cell.scenario.to_string(),
            tried: Vec::new(),
            chosen: None,
            skipped: None,
        };
        let Candidates { classes, assignments } = match search {
            Err(reason) => {
                record.skipped = Some(reason.clone());
                return Ok((record, None));
            }
            Ok(found) => found,
        };
        let mut best: Option<(f64, ChosenPinning)> = None;
        for (i, candidate) in assignments.iter().enumerate() {
            let map = candidate.pin_map(classes, &self.runner.cores);
            let described = candidate.describe(classes);
            let label = format!(
                "{} {} best-static search {}/{} ({described})",
                cell.workload.name,
                cell.scenario,
                i + 1,
                assignments.len()
            );
            progress.start(&label);
            let measured = self.runner.run(&RunSpec {
                label: label.clone(),
                workload: cell.workload,
                threads: cell.threads,
                placement: Placement::Unmanaged(&map),
                load: cell.load.clone(),
                trace: None,
            })?;
            progress.finish(&label, cell.length, measured.wall_s);
            record.tried.push((described.clone(), measured.wall_s));
            if best.as_ref().is_none_or(|(wall, _)| measured.wall_s < *wall) {
                best = Some((measured.wall_s, (described, map)));
            }
        }
        let chosen = best.map(|(_, chosen)| chosen);
        record.chosen = chosen.as_ref().map(|(described, _)| described.clone());
        Ok((record, chosen))
    }

    /// Step 2b: every scheduler `--repeat` times on a cell, interleaved.
    fn measure_cell(
        &self,
        cell: &Cell,
        chosen: Option<&ChosenPinning>,
        trace_dir: Option<&tempfile::TempDir>,
        progress: &mut Progress,
        measured: &mut MatrixRuns,
    ) -> Result<(), BenchError> {
        for (repeat, k) in interleaved(self.schedulers.len(), self.repeat) {
            let scheduler = &self.schedulers[k];
            let (placement, assignment) = match scheduler.kind {
                SchedulerKind::BestStatic => match chosen {
                    Some((described, map)) => (Placement::Unmanaged(map), Some(described.clone())),
                    None => continue,
                },
                SchedulerKind::Policy(_) => (Placement::Managed(scheduler), None),
            };
            let label = format!("{} {} {scheduler} #{}", cell.workload.name, cell.scenario, repeat + 1);
            let trace = trace_dir.and_then(|dir| {
                matches!(placement, Placement::Managed(_))
                    .then(|| dir.path().join(format!("run-{}.csv", measured.runs.len())))
            });
            progress.start(&label);
            let run: Measured = self.runner.run(&RunSpec {
                label: label.clone(),
                workload: cell.workload,
                threads: cell.threads,
                placement,
                load: cell.load.clone(),
                trace: trace.clone(),
            })?;
            progress.finish(&label, cell.length, run.wall_s);
            measured.runs.push(RunRecord {
                workload: cell.workload.name.clone(),
                scenario: cell.scenario.to_string(),
                scheduler: scheduler.to_string(),
                repeat,
                seed: None,
                threads: cell.threads,
                cores: self.cores(),
                completion_s: Some(run.wall_s),
                mean_speed: run.mean_speed,
                metric: run.metric,
                repins: run.repins,
                os_share: run.os_share,
                manager_cpu_s: Some(run.manager_cpu_s),
                workload_cpu_s: Some(run.workload_cpu_s),
                assignment,
                model: None,
            });
            measured.trace_paths.push(trace);
        }
        Ok(())
    }
}

/// What the calibration runs found, by (workload index, level).
#[derive(Default)]
struct Calibration {
    lengths: HashMap<(usize, Level), f64>,
    names: HashMap<(usize, Level), Vec<String>>,
    records: Vec<CalibrationRecord>,
    memory_bandwidth: Option<MemoryBandwidth>,
}

/// best-static's candidates (or why there are none) by (workload index, scenario).
type Searches = HashMap<(usize, Scenario), Result<Candidates, String>>;

/// best-static's chosen pinning: its description and thread name ─► CPUs.
type ChosenPinning = (String, HashMap<String, CpuSet>);

/// One (workload, scenario) of the matrix, with what its runs share.
struct Cell<'a> {
    workload: &'a BenchWorkload,
    scenario: Scenario,
    threads: usize,
    /// The calibrated length of a run (seconds).
    length: f64,
    load: LoadSchedule,
}

/// Everything the matrix measured so far.
#[derive(Default)]
struct MatrixRuns {
    runs: Vec<RunRecord>,
    /// Aligned with `runs`.
    trace_paths: Vec<Option<PathBuf>>,
    best_static: Vec<BestStaticRecord>,
}

/// Progress on stderr: a bar on a terminal (position in expected seconds of
/// runs, so the time left accounts for long and short runs alike), one line
/// per finished run otherwise, nothing when quiet.
struct Progress {
    bar: Option<ProgressBar>,
    lines: bool,
    started: Instant,
    runs_done: u64,
    /// Expected seconds of the whole matrix and of the runs done (from the
    /// calibration); 0 while calibrating.
    expected_total: f64,
    expected_done: f64,
}

impl Progress {
    fn new(quiet: bool, what: &str, steps: u64) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let bar = (!quiet && terminal).then(|| {
            let bar = ProgressBar::with_draw_target(Some(steps), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.set_message(what.to_string());
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress {
            bar,
            lines: !quiet && !terminal,
            started: Instant::now(),
            runs_done: 0,
            expected_total: 0.0,
            expected_done: 0.0,
        }
    }

    /// After calibration: measure progress in expected seconds (the
    /// calibration run lengths; loaded runs take longer).
    fn switch_to_time(&mut self, runs: usize, expected_total: f64) {
        self.expected_total = expected_total;
        self.expected_done = 0.0;
        self.started = Instant::now();
        if self.lines {
            let seconds = Duration::from_secs(expected_total.round() as u64);
            eprintln!(
                "bench: {runs} runs to make, at least {} of run time",
                pinlearn_engine::format_duration(seconds)
            );
        }
        if let Some(bar) = &self.bar {
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed_precise} [{bar:30}] {msg} (about {eta} left)")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.set_length((expected_total * 1000.0).round().max(1.0) as u64);
            bar.set_position(0);
            bar.set_message(format!("{runs} runs to make"));
            bar.reset_eta();
        }
    }

    fn start(&self, label: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(label.to_string());
        }
    }

    /// A run finished; `expected` is its expected length (1 while calibrating).
    fn finish(&mut self, label: &str, expected: f64, wall_s: f64) {
        self.runs_done += 1;
        if self.expected_total > 0.0 {
            self.expected_done += expected;
        }
        if let Some(bar) = &self.bar {
            if self.expected_total > 0.0 {
                bar.set_position((self.expected_done * 1000.0).round() as u64);
            } else {
                bar.inc(1);
            }
        }
        if self.lines {
            let left = if self.expected_total > 0.0 && self.expected_done > 0.0 {
                let rate = self.started.elapsed().as_secs_f64() / self.expected_done;
                let seconds = ((self.expected_total - self.expected_done) * rate).max(0.0).round();
                format!(
                    ", about {} left",
                    pinlearn_engine::format_duration(Duration::from_secs(seconds as u64))
                )
            } else {
                String::new()
            };
            eprintln!("bench [{}] {label}: {wall_s:.3} s{left}", self.runs_done);
        }
    }

    fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> BenchOptions {
        BenchOptions::default()
    }

    #[test]
    fn the_cpu_model_is_the_first_model_name_of_cpuinfo() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\n\
                   processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor\n";
        assert_eq!(cpu_model(x86).as_deref(), Some("Intel(R) Xeon(R) Processor"));
        assert_eq!(
            cpu_model("processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n"),
            None
        );
        assert_eq!(cpu_model("model name\t:   \n"), None);
    }

    #[test]
    fn bad_input_is_found_before_anything_runs() {
        let exe = std::env::current_exe().expect("test binary");
        let cases: Vec<(BenchOptions, &str)> = vec![
            (
                BenchOptions {
                    workloads: vec!["nbody".into()],
                    ..options()
                },
                "unknown workload",
            ),
            (
                BenchOptions {
                    json: Some(Output::from_arg("/no/such/dir/out.json")),
                    ..options()
                },
                "does not exist",
            ),
            (
                BenchOptions {
                    cpus: Some(CpuSet::from_iter([100_000])),
                    ..options()
                },
                "--cpus",
            ),
            (
                BenchOptions {
                    best_static_max: 0,
                    ..options()
                },
                "at least 1",
            ),
            (BenchOptions { repeat: 0, ..options() }, "--repeat"),
        ];
        for (options, needle) in cases {
            let err = plan(&options, &exe).err().expect(needle);
            assert!(err.is_bad_input(), "{needle}: {err}");
            assert!(err.to_string().contains(needle), "{needle}: {err}");
        }
        let missing = Path::new("/no/such/pinlearn");
        let err = plan(&options(), missing).err().expect("no binary");
        assert!(
            !err.is_bad_input() && err.to_string().contains("/no/such/pinlearn"),
            "{err}"
        );
    }

    #[test]
    fn matrices_choose_scenarios_and_schedulers() {
        let exe = std::env::current_exe().expect("test binary");
        let with = |matrix| Plan::new(&BenchOptions { matrix, ..options() }, &exe).expect("valid");
        let quick = with(Some(Matrix::Quick));
        assert_eq!(quick.setup.scenarios, ["C.1", "C.2"]);
        assert_eq!(quick.setup.schedulers, ["os", "learn"]);
        assert_eq!(quick.workloads.len(), PRESETS.len());
        let explicit = Plan::new(
            &BenchOptions {
                scenarios: Some(Scenario::parse_list("B.3").expect("valid")),
                ..options()
            },
            &exe,
        )
        .expect("valid");
        assert_eq!(explicit.setup.schedulers, ["os", "static", "learn"]);
        let full = with(Some(Matrix::Full));
        assert_eq!(full.scenarios.len(), 10);
        assert_eq!(full.setup.schedulers, ["os", "static", "learn", "best-static"]);
        assert_eq!(full.levels(), [Level::Small, Level::Medium, Level::Large]);
        assert_eq!(full.cores_per_node.iter().sum::<usize>(), full.cores());
    }

    #[test]
    fn the_dry_run_plan_names_cells_loads_and_time() {
        let exe = std::env::current_exe().expect("test binary");
        let plan = plan(
            &BenchOptions {
                workloads: vec!["aco".into()],
                scenarios: Some(Scenario::parse_list("C.2,D").expect("valid")),
                schedulers: Some(Scheduler::parse_list("os,learn").expect("valid")),
                repeat: 5,
                ..options()
            },
            &exe,
        )
        .expect("valid");
        let text = plan.describe();
        assert!(text.contains("5 repeats, schedulers os, learn"), "{text}");
        assert!(text.contains("aco: pinlearn work aco --iterations 3000"), "{text}");
        assert!(text.contains("  C.2 (1 thread per core"), "{text}");
        assert!(text.contains("load from 0.0 s: CPUs "), "{text}");
        assert!(text.contains("  D (2 threads per core"), "{text}");
        // 2 cells x 2 schedulers x 5 repeats + calibration at levels B and C.
        assert!(text.contains("22 runs at most"), "{text}");
    }
}
