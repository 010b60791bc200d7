//! `pinlearn bench`: the papers' experiment matrix on the real machine,
//! every scheduler side by side with Linux, each run made through the real
//! `pinlearn` binary exactly as a user would make it.
//!
//! ```text
//!   BenchCommand ─► Plan::new: parse workloads, schedulers, scenarios; the cores
//!        │          (hwloc, --cpus); every error here is bad input (exit 2)
//!        ▼
//!   1. calibrate: each (workload, level) once, Linux alone, no manager, no load
//!        │        ─► run length (schedules time-varying loads, estimates the time left),
//!        │           worker thread names (best-static's thread classes), warm caches
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
mod results;
mod runner;
mod scenario;
mod scheduler;
mod workload;

pub use results::{BenchResults, BestStaticRecord, CalibrationRecord, RunRecord, Setup, SummaryRecord};
pub use scenario::{Availability, Level, LoadPlan, Scenario};
pub use scheduler::Scheduler;
pub use workload::{BenchWorkload, PRESETS, Preset};

use best_static::Candidates;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pinlearn_topology::{CpuSet, Topology};
use runner::{Measured, Placement, RunSpec, Runner};
use std::collections::{BTreeSet, HashMap};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Runs the papers' experiment matrix: workloads x scenarios x schedulers,
/// repeated and interleaved.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchCommand {
    /// Workloads to run, comma-separated: aco, aco-spin, pipeline, blackscholes,
    /// swaptions, binpack, stream [default: all]
    #[arg(long, value_delimiter = ',', value_name = "NAME")]
    pub workload: Vec<String>,
    /// Arguments for `pinlearn work NAME` replacing the preset's (one workload only)
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub workload_args: Option<String>,
    /// Multiply each preset's amount of work by F (runs about F times as long; the
    /// learner's first probe comes after ~4.5 s, so its wins need runs of 10 s or more)
    #[arg(long, value_name = "F")]
    pub scale: Option<f64>,
    /// Schedulers, comma-separated: os, static, learn[:OBJECTIVE], best-static, with
    /// optional @METRIC [default: os,static,learn; --matrix quick os,learn; full adds best-static]
    #[arg(long, value_name = "LIST")]
    pub schedulers: Option<String>,
    /// Scenarios, comma-separated: A.1 ... C.3 (threads per core A 4, B 2, C 1; load 1 none,
    /// 2 on half the cores, 3 from a third of the run, D alternating halves) and D [default: C.1,C.2]
    #[arg(long, value_name = "LIST", conflicts_with = "matrix")]
    pub scenarios: Option<String>,
    /// A predefined matrix: quick (C.1, C.2) or full (A.1 ... C.3 and D)
    #[arg(long, value_enum)]
    pub matrix: Option<Matrix>,
    /// Runs per scheduler and scenario
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Only use these CPUs (list syntax such as 0-3,8), within the bench's own
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// A `pinlearn run --config` file for every managed run (the learner's tunables)
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Session of the background load: own (another user's job: Linux's autogroup
    /// shares CPU between it and the workload as groups) or same (thread by thread)
    #[arg(long, value_enum, default_value_t = LoadSession::Own)]
    pub load_session: LoadSession,
    /// best-static tries at most this many distinct pinnings per scenario (else it is skipped)
    #[arg(long, default_value_t = 16, value_name = "N")]
    pub best_static_max: usize,
    /// Write every run and the summaries as JSON to FILE
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the tables as Markdown to FILE
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Draw SVG plots: FILE-WORKLOAD-times.svg, FILE-WORKLOAD-SCENARIO-speed.svg
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Print only the tables (no progress)
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Matrix {
    /// C.1 and C.2 for every workload, os and learn: a few minutes on 2 cores
    Quick,
    /// A.1 ... C.3 and D for every workload, plus best-static: under an hour on 2 cores
    Full,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadSession {
    /// `pinlearn load --setsid`: its own session and autogroup
    Own,
    /// The bench's session, like the workload
    Same,
}

/// What went wrong; `is_bad_input` tells the CLI to exit with status 2.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    BadInput(String),
    #[error("run {run} failed: {reason}")]
    RunFailed { run: String, reason: String },
    #[error("cannot write {path}: {reason}")]
    Output { path: String, reason: String },
    #[error(transparent)]
    Plot(#[from] pinlearn_report::ReportError),
    #[error("{0}")]
    Machine(String),
}

impl BenchError {
    pub fn is_bad_input(&self) -> bool {
        matches!(self, BenchError::BadInput(_))
    }

    /// 2 for bad input, 1 otherwise.
    pub fn exit_status(&self) -> i32 {
        if self.is_bad_input() { 2 } else { 1 }
    }
}

/// Runs the bench described by `cmd`, running `pinlearn_exe` (the CLI passes
/// `std::env::current_exe()`) for every run, and prints the tables on stdout.
pub fn run(cmd: &BenchCommand, pinlearn_exe: &Path) -> Result<(), BenchError> {
    let plan = Plan::new(cmd, pinlearn_exe)?;
    let (results, traces) = plan.execute()?;
    print!("{}", results.to_text());
    if let Some(path) = &cmd.json {
        results.write_json(path)?;
    }
    if let Some(path) = &cmd.markdown {
        results::write_file(path, &results.to_markdown())?;
    }
    if let Some(prefix) = &cmd.plot {
        let written = results::write_plots(&results, prefix, &traces.paths)?;
        if !cmd.quiet {
            for path in written {
                eprintln!("bench: wrote {}", path.display());
            }
        }
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
    cores: Vec<CpuSet>,
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
    fn new(cmd: &BenchCommand, exe: &Path) -> Result<Self, BenchError> {
        let workloads = workload::select(&cmd.workload, cmd.workload_args.as_deref(), cmd.scale)?;
        let scenarios = match (&cmd.scenarios, cmd.matrix) {
            (Some(list), _) => scenario::parse_list(list)?,
            (None, Some(Matrix::Full)) => scenario::full_matrix(),
            (None, _) => scenario::quick_matrix(),
        };
        let schedulers = match (&cmd.schedulers, cmd.matrix) {
            (Some(list), _) => scheduler::parse_list(list)?,
            (None, Some(Matrix::Full)) => scheduler::parse_list("os,static,learn,best-static")?,
            (None, Some(Matrix::Quick)) => scheduler::parse_list("os,learn")?,
            (None, _) => scheduler::parse_list("os,static,learn")?,
        };
        if cmd.best_static_max == 0 {
            return Err(BenchError::BadInput("--best-static-max must be at least 1".into()));
        }
        for path in [&cmd.json, &cmd.markdown, &cmd.plot].into_iter().flatten() {
            let parent = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if !parent.is_dir() {
                return Err(BenchError::BadInput(format!(
                    "cannot write {}: directory {} does not exist",
                    path.display(),
                    parent.display()
                )));
            }
        }
        if !exe.is_file() {
            return Err(BenchError::Machine(format!(
                "the pinlearn binary {} does not exist",
                exe.display()
            )));
        }

        let machine =
            Topology::detect().map_err(|e| BenchError::Machine(format!("cannot read the machine topology: {e}")))?;
        let restricted = match &cmd.cpus {
            Some(list) => {
                let cpus = CpuSet::parse_list(list).map_err(|e| BenchError::BadInput(format!("--cpus: {e}")))?;
                let outside = cpus.difference(&machine.cpus());
                if cpus.is_empty() || !outside.is_empty() {
                    return Err(BenchError::BadInput(format!(
                        "--cpus {list}: give CPUs within the bench's own ({})",
                        machine.cpus()
                    )));
                }
                Some(cpus)
            }
            None => None,
        };
        if let Some(path) = &cmd.config {
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
        let (first, second) = scenario::halves(cores.len());
        let union = |indices: &[usize]| indices.iter().fold(CpuSet::new(), |all, &i| all.union(&cores[i]));
        let runner = Runner {
            exe: exe.to_path_buf(),
            cpus: restricted,
            first_half: union(&first),
            second_half: union(&second),
            own_session: cmd.load_session == LoadSession::Own,
            config: cmd.config.clone(),
        };
        let setup = Setup {
            date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            pinlearn: exe.display().to_string(),
            cpus: topology.cpus().to_string(),
            cores: cores.len(),
            first_half_cpus: runner.first_half.to_string(),
            second_half_cpus: runner.second_half.to_string(),
            load_generator: "pinlearn load (one spinning thread pinned to each CPU)".into(),
            load_session: match cmd.load_session {
                LoadSession::Own => "own".into(),
                LoadSession::Same => "same".into(),
            },
            autogroup: std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
                .ok()
                .map(|s| s.trim().to_string()),
            repeat: cmd.repeat as usize,
            schedulers: schedulers.iter().map(ToString::to_string).collect(),
            scenarios: scenarios.iter().map(ToString::to_string).collect(),
            workloads: workloads.iter().map(|w| (w.name.clone(), w.command_line())).collect(),
        };
        Ok(Plan {
            workloads,
            schedulers,
            scenarios,
            repeat: cmd.repeat as usize,
            runner,
            cores,
            best_static_max: cmd.best_static_max,
            keep_traces: cmd.plot.is_some(),
            quiet: cmd.quiet,
            setup,
        })
    }

    fn levels(&self) -> Vec<Level> {
        let levels: BTreeSet<Level> = self.scenarios.iter().map(|s| s.level).collect();
        levels.into_iter().collect()
    }

    fn execute(self) -> Result<(BenchResults, Traces), BenchError> {
        let linux_alone = HashMap::new();
        let levels = self.levels();
        let mut progress = Progress::new(self.quiet, "calibrating", (self.workloads.len() * levels.len()) as u64);

        // 1. Calibration.
        let mut calibration: Vec<CalibrationRecord> = Vec::new();
        let mut lengths: HashMap<(usize, Level), f64> = HashMap::new();
        let mut names: HashMap<(usize, Level), Vec<String>> = HashMap::new();
        for (w, workload) in self.workloads.iter().enumerate() {
            for &level in &levels {
                let threads = level.threads_per_core() * self.cores.len().max(1);
                let label = format!("{} {} calibration", workload.name, level_letter(level));
                progress.start(&label);
                let measured = self.runner.run(&RunSpec {
                    label: label.clone(),
                    workload,
                    threads,
                    placement: Placement::Unmanaged(&linux_alone),
                    load: LoadPlan::None,
                    trace: None,
                })?;
                progress.finish(&label, 1.0, measured.wall_s);
                lengths.insert((w, level), measured.wall_s);
                names.insert((w, level), measured.worker_names.clone());
                calibration.push(CalibrationRecord {
                    workload: workload.name.clone(),
                    level: level_letter(level).to_string(),
                    threads,
                    wall_s: measured.wall_s,
                    worker_threads: measured.worker_names,
                });
            }
        }

        // The searches' sizes, so that the time left is known from the start.
        let wants_best_static = self.schedulers.contains(&Scheduler::BestStatic);
        let mut searches: HashMap<(usize, Scenario), Result<Candidates, String>> = HashMap::new();
        if wants_best_static {
            for w in 0..self.workloads.len() {
                for &scenario in &self.scenarios {
                    let classes = best_static::classes(&names[&(w, scenario.level)]);
                    let sizes: Vec<usize> = classes.iter().map(|c| c.members.len()).collect();
                    let groups = scenario.core_groups(self.cores.len());
                    let found = best_static::candidates(&sizes, self.cores.len(), &groups, self.best_static_max)
                        .map(|assignments| Candidates { classes, assignments })
                        .map_err(|e| e.to_string());
                    searches.insert((w, scenario), found);
                }
            }
        }
        let mut expected_total = 0.0;
        let mut total_runs = 0;
        for w in 0..self.workloads.len() {
            for &scenario in &self.scenarios {
                let per_run = lengths[&(w, scenario.level)];
                let tried = match searches.get(&(w, scenario)) {
                    Some(Ok(found)) => found.assignments.len(),
                    _ => 0,
                };
                let runs = self
                    .schedulers
                    .iter()
                    .filter(|s| **s != Scheduler::BestStatic || tried > 0)
                    .count()
                    * self.repeat
                    + tried;
                expected_total += per_run * runs as f64;
                total_runs += runs;
            }
        }
        progress.switch_to_time(total_runs, expected_total);

        // 2. The matrix.
        let trace_dir = if self.keep_traces {
            Some(
                tempfile::tempdir()
                    .map_err(|e| BenchError::Machine(format!("cannot create a temporary directory: {e}")))?,
            )
        } else {
            None
        };
        let mut runs: Vec<RunRecord> = Vec::new();
        let mut trace_paths: Vec<Option<PathBuf>> = Vec::new();
        let mut best_static_records: Vec<BestStaticRecord> = Vec::new();
        for (w, workload) in self.workloads.iter().enumerate() {
            for &scenario in &self.scenarios {
                let threads = scenario.threads(self.cores.len());
                let length = lengths[&(w, scenario.level)];
                let load = scenario.load_plan(Duration::from_secs_f64(length));
                let mut chosen_map: Option<(String, HashMap<String, CpuSet>)> = None;
                if let Some(search) = searches.get(&(w, scenario)) {
                    let mut record = BestStaticRecord {
                        workload: workload.name.clone(),
                        scenario: scenario.to_string(),
                        tried: Vec::new(),
                        chosen: None,
                        skipped: None,
                    };
                    match search {
                        Err(reason) => record.skipped = Some(reason.clone()),
                        Ok(Candidates {
                            classes,
                            assignments: candidates,
                        }) => {
                            let mut best: Option<(f64, String, HashMap<String, CpuSet>)> = None;
                            for (i, candidate) in candidates.iter().enumerate() {
                                let map = candidate.pin_map(classes, &self.cores);
                                let described = candidate.describe(classes);
                                let label = format!(
                                    "{} {scenario} best-static search {}/{} ({described})",
                                    workload.name,
                                    i + 1,
                                    candidates.len()
                                );
                                progress.start(&label);
                                let measured = self.runner.run(&RunSpec {
                                    label: label.clone(),
                                    workload,
                                    threads,
                                    placement: Placement::Unmanaged(&map),
                                    load: load.clone(),
                                    trace: None,
                                })?;
                                progress.finish(&label, length, measured.wall_s);
                                record.tried.push((described.clone(), measured.wall_s));
                                if best.as_ref().is_none_or(|(wall, _, _)| measured.wall_s < *wall) {
                                    best = Some((measured.wall_s, described, map));
                                }
                            }
                            if let Some((_, described, map)) = best {
                                record.chosen = Some(described.clone());
                                chosen_map = Some((described, map));
                            }
                        }
                    }
                    best_static_records.push(record);
                }

                for (repeat, k) in scheduler::interleaved(self.schedulers.len(), self.repeat) {
                    let scheduler = &self.schedulers[k];
                    let (placement, assignment) = match scheduler {
                        Scheduler::BestStatic => match &chosen_map {
                            Some((described, map)) => (Placement::Unmanaged(map), Some(described.clone())),
                            None => continue,
                        },
                        managed => (Placement::Managed(managed), None),
                    };
                    let label = format!("{} {scenario} {scheduler} #{}", workload.name, repeat + 1);
                    let trace = trace_dir.as_ref().and_then(|dir| {
                        matches!(placement, Placement::Managed(_))
                            .then(|| dir.path().join(format!("run-{}.csv", runs.len())))
                    });
                    progress.start(&label);
                    let measured: Measured = self.runner.run(&RunSpec {
                        label: label.clone(),
                        workload,
                        threads,
                        placement,
                        load: load.clone(),
                        trace: trace.clone(),
                    })?;
                    progress.finish(&label, length, measured.wall_s);
                    runs.push(RunRecord {
                        workload: workload.name.clone(),
                        scenario: scenario.to_string(),
                        scheduler: scheduler.to_string(),
                        repeat,
                        threads,
                        wall_s: measured.wall_s,
                        mean_speed: measured.mean_speed,
                        metric: measured.metric,
                        manager_cpu_s: measured.manager_cpu_s,
                        workload_cpu_s: measured.workload_cpu_s,
                        manager_cpu_pct: if measured.workload_cpu_s > 0.0 {
                            100.0 * measured.manager_cpu_s / measured.workload_cpu_s
                        } else {
                            0.0
                        },
                        repins: measured.repins,
                        os_share: measured.os_share,
                        assignment,
                    });
                    trace_paths.push(trace);
                }
            }
        }
        progress.done();
        let summary = results::summarise(&runs);
        Ok((
            BenchResults {
                setup: self.setup,
                calibration,
                best_static: best_static_records,
                runs,
                summary,
            },
            Traces {
                _dir: trace_dir,
                paths: trace_paths,
            },
        ))
    }
}

fn level_letter(level: Level) -> &'static str {
    match level {
        Level::Small => "A",
        Level::Medium => "B",
        Level::Large => "C",
    }
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
                humantime::format_duration(seconds)
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
                    humantime::format_duration(Duration::from_secs(seconds as u64))
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
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        bench: BenchCommand,
    }

    fn parse(args: &[&str]) -> Result<BenchCommand, clap::Error> {
        Cli::try_parse_from(std::iter::once("bench").chain(args.iter().copied())).map(|c| c.bench)
    }

    #[test]
    fn options_parse_with_hyphenated_workload_args() {
        let cmd = parse(&[
            "--workload",
            "aco",
            "--workload-args",
            "--iterations 10 --sync spin",
            "--schedulers",
            "os,learn:balanced:0.04@cpu",
            "--scenarios",
            "C.1,D",
            "--repeat",
            "2",
        ])
        .expect("valid");
        assert_eq!(cmd.workload, ["aco"]);
        assert_eq!(cmd.workload_args.as_deref(), Some("--iterations 10 --sync spin"));
        assert_eq!(cmd.repeat, 2);
        assert!(parse(&["--scenarios", "C.1", "--matrix", "quick"]).is_err());
        assert!(parse(&["--repeat", "0"]).is_err());
    }

    #[test]
    fn bad_input_is_found_before_anything_runs() {
        let exe = std::env::current_exe().expect("test binary");
        for (args, needle) in [
            (vec!["--scenarios", "Z.9"], "unknown scenario"),
            (vec!["--schedulers", "fastest"], "unknown scheduler"),
            (vec!["--workload", "nbody"], "unknown workload"),
            (vec!["--json", "/no/such/dir/out.json"], "does not exist"),
            (vec!["--cpus", "100000"], "--cpus"),
            (vec!["--best-static-max", "0"], "at least 1"),
        ] {
            let cmd = parse(&args).expect("parses");
            let err = run(&cmd, &exe).expect_err(needle);
            assert!(err.is_bad_input(), "{args:?}: {err}");
            assert_eq!(err.exit_status(), 2);
            assert!(err.to_string().contains(needle), "{args:?}: {err}");
        }
        let missing = Path::new("/no/such/pinlearn");
        let err = run(&parse(&[]).expect("parses"), missing).expect_err("no binary");
        assert!(
            !err.is_bad_input() && err.to_string().contains("/no/such/pinlearn"),
            "{err}"
        );
    }

    #[test]
    fn matrices_choose_scenarios_and_schedulers() {
        let exe = std::env::current_exe().expect("test binary");
        let quick = Plan::new(&parse(&["--matrix", "quick"]).expect("parses"), &exe).expect("valid");
        assert_eq!(quick.setup.scenarios, ["C.1", "C.2"]);
        assert_eq!(quick.setup.schedulers, ["os", "learn"]);
        let explicit = Plan::new(&parse(&["--scenarios", "B.3"]).expect("parses"), &exe).expect("valid");
        assert_eq!(explicit.setup.schedulers, ["os", "static", "learn"]);
        assert_eq!(quick.workloads.len(), PRESETS.len());
        let full = Plan::new(&parse(&["--matrix", "full"]).expect("parses"), &exe).expect("valid");
        assert_eq!(full.scenarios.len(), 10);
        assert_eq!(full.setup.schedulers, ["os", "static", "learn", "best-static"]);
        assert_eq!(full.levels(), [Level::Small, Level::Medium, Level::Large]);
        assert!(!full.runner.first_half.is_empty() && !full.runner.second_half.is_empty());
    }
}
