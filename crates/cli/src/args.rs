//! Command-line arguments (clap derive) and how they override settings.

use clap::{Args, Parser, Subcommand};
use pinlearn_engine::preload::Preload;
use pinlearn_engine::{EngineError, Metric, PolicyChoice, Settings};
use pinlearn_experiment::{Scenario, Scheduler};
use pinlearn_policy::Objective;
use pinlearn_report::Output;
use pinlearn_topology::{CpuSet, Topology, TopologyError};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Learns where the threads of a parallel program should run, and re-pins them.
#[derive(Parser, Debug)]
#[command(name = "pinlearn", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Launch a program and supervise its threads until it exits.
    Run(RunArgs),
    /// Supervise the threads of a running process until it ends, --duration, or Ctrl-C.
    Attach(AttachArgs),
    /// Show the machine as pinlearn sees it: places, allowed CPUs, probes available.
    Topo(crate::topo::TopoArgs),
    /// Run an embedded workload with a background load, under the OS alone and under pinlearn.
    Demo(crate::demo::DemoArgs),
    /// Run one of the benchmark workloads in this process.
    Work(crate::work::WorkArgs),
    /// Generate background CPU load on some CPUs (another user's job, for experiments).
    Load(crate::load::LoadArgs),
    /// Print every tunable with its default value, as a --config file (TOML).
    Config,
    /// Run the policies on a simulated many-core NUMA machine (the papers' scenarios).
    Sim(crate::sim::SimArgs),
    /// Run the papers' experiment matrix on this machine: every scheduler side by side with Linux.
    Bench(crate::bench::BenchArgs),
    /// Put back the CPU masks a pinlearn that died (kill -9) left on a process, from its journal.
    Restore(RestoreArgs),
    /// Show where a supervised program's threads and bubbles are right now.
    Status(StatusArgs),
    /// Started by run and attach: restores the masks if the manager dies.
    #[command(hide = true)]
    Watchdog(WatchdogArgs),
}

/// `pinlearn restore PID`.
#[derive(Args, Debug)]
pub struct RestoreArgs {
    /// The process pinlearn supervised (the PID given to attach, or run's program).
    pub pid: u32,
}

/// `pinlearn status PID`.
#[derive(Args, Debug)]
pub struct StatusArgs {
    /// The process a running pinlearn supervises (the PID given to attach, or run's program).
    pub pid: u32,
    /// Print the status as one JSON object instead (- for stdout, or a FILE)
    #[arg(long, value_name = "FILE", value_parser = crate::args::parse_output)]
    pub json: Option<pinlearn_report::Output>,
}

/// `pinlearn watchdog` (internal).
#[derive(Args, Debug)]
pub struct WatchdogArgs {
    /// The manager to watch.
    #[arg(long)]
    pub manager: u32,
    /// Its journal of original masks.
    #[arg(long)]
    pub journal: std::path::PathBuf,
    /// The process it supervises (its status file is removed if the
    /// manager dies without removing it).
    #[arg(long)]
    pub target: Option<u32>,
}

/// Options shared by `run` and `attach`.
#[derive(Args, Debug, Clone, Default)]
pub struct CommonArgs {
    /// Core-level period T_CPU [default: 50ms].
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub interval: Option<Duration>,
    /// Per-thread speed signal [default: auto].
    #[arg(long, value_parser = parse_metric)]
    pub metric: Option<Metric>,
    /// What the learner maximises: own (each thread its own speed), mean, or balanced[:GAMMA] [default: own].
    #[arg(long, value_parser = parse_objective)]
    pub objective: Option<Objective>,
    /// learn (reinforcement learning), static (round-robin once), os (measure only), bubbles (spread the --bubbles groups over the topology) or bubbles+learn (bubbles, each thread then choosing its core inside its bubble's place by the run shares) [default: learn].
    #[arg(long, value_parser = parse_policy)]
    pub policy: Option<PolicyChoice>,
    /// Only use these CPUs (list syntax such as 0-3,8), within those the target may use.
    #[arg(long, value_parser = parse_cpus, value_name = "LIST")]
    pub cpus: Option<CpuSet>,
    /// Seed of the learner's random choices [default: 1].
    #[arg(long)]
    pub seed: Option<u64>,
    /// TOML file holding every tunable of the algorithm (flags override it).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Write one CSV row per thread per period to FILE.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// TOML rules putting threads in nested bubbles (by thread-name pattern or PID), for --policy bubbles or bubbles+learn; see docs/bubbles.md.
    #[arg(long, value_name = "FILE")]
    pub bubbles: Option<PathBuf>,
    /// Write the end-of-run summary as JSON to FILE (- for stdout; not with run, whose program writes there).
    #[arg(long, value_name = "FILE", value_parser = parse_output)]
    pub json: Option<Output>,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
    /// Supervise only the target process, not its descendants.
    #[arg(long)]
    pub no_children: bool,
    /// Use this topology instead of the machine's: an hwloc synthetic string
    /// ("node:2 core:4 pu:1", needs --topology-map) or an XML file from lstopo.
    #[arg(long, value_name = "SPEC")]
    pub topology: Option<String>,
    /// Real CPUs the PUs of a synthetic --topology stand for, in order: e.g.
    /// "node:2 core:1 pu:1" with map 0-1 makes CPUs 0 and 1 two NUMA nodes.
    #[arg(long, value_parser = parse_cpus, value_name = "LIST", requires = "topology")]
    pub topology_map: Option<CpuSet>,
    /// Move a process's memory to the node where this share of its threads runs (0 to 1; off by default).
    #[arg(long, value_name = "ZETA")]
    pub memory_binding: Option<f64>,
    /// The NUMA-level period T_NUMA [default: 2s].
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub numa_interval: Option<Duration>,
}

impl CommonArgs {
    /// The topology to place threads on: `--topology` (mapped onto real CPUs
    /// with `--topology-map`) or this machine's.
    pub fn topology(&self) -> Result<Topology, EngineError> {
        let Some(spec) = &self.topology else {
            return Topology::detect()
                .map_err(|e| EngineError::io("cannot read the machine topology", std::io::Error::other(e)));
        };
        Topology::from_spec_onto(spec, self.topology_map.as_ref()).map_err(|e| match e {
            TopologyError::NeedsMap { pus, .. } => EngineError::bad_input(format!(
                "--topology {spec:?} is synthetic: add --topology-map LIST to say which real CPUs its {pus} PUs are"
            )),
            TopologyError::CountMismatch { .. } => EngineError::bad_input(format!("--topology-map: {e}")),
            e => EngineError::bad_input(e.to_string()),
        })
    }

    /// Overrides `settings` with the flags that were given.
    pub fn apply(&self, settings: &mut Settings) -> Result<(), EngineError> {
        if let Some(interval) = self.interval {
            settings.interval = interval;
        }
        if let Some(metric) = self.metric {
            settings.metric = metric;
        }
        if let Some(objective) = self.objective {
            settings.learn.objective = objective;
        }
        if let Some(policy) = self.policy {
            settings.policy = policy;
        }
        if let Some(seed) = self.seed {
            settings.seed = seed;
        }
        if self.no_children {
            settings.children = false;
        }
        if let Some(zeta) = self.memory_binding {
            settings.memory_binding = Some(zeta);
        }
        if let Some(numa_interval) = self.numa_interval {
            settings.learn.numa.period_s = numa_interval.as_secs_f64();
        }
        settings.validate()
    }
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Stop supervising after DUR (the program runs on, unpinned).
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// The program is killed (SIGKILL) if pinlearn ends before it, however
    /// pinlearn ends, killed included (by default it runs on, unpinned).
    #[arg(long, conflicts_with = "duration")]
    pub end_with_pinlearn: bool,
    /// Load pinlearn's preload library into the program: `heartbeats` (a beat
    /// per OpenMP region piece and barrier passed, and per
    /// pthread_barrier_wait), `threads` (its thread-creation tree as nested
    /// bubbles; with --policy bubbles or bubbles+learn and no --bubbles file),
    /// or both (`heartbeats,threads`).
    #[arg(long, value_name = "PARTS", value_parser = parse_preload)]
    pub preload: Option<Preload>,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

#[derive(Args, Debug)]
pub struct AttachArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Stop after DUR.
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// The process to supervise.
    pub pid: u32,
}

pub fn parse_preload(s: &str) -> Result<Preload, String> {
    s.parse().map_err(|e: EngineError| e.to_string())
}

pub fn parse_metric(s: &str) -> Result<Metric, String> {
    s.parse().map_err(|e: EngineError| e.to_string())
}

/// The one duration syntax (`50ms`, `5s`, `1.5s`, `2m`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    pinlearn_engine::parse_duration(s).map_err(|e| e.to_string())
}

/// `FILE`, or `-` for stdout: every `--json` (and `--markdown`).
pub fn parse_output(s: &str) -> Result<Output, String> {
    if s.is_empty() {
        return Err("give a file name, or - for stdout".into());
    }
    Ok(Output::from_arg(s))
}

/// A scenario list such as `C.1,C.2` (pinlearn-experiment's parser).
#[derive(Clone, Debug, PartialEq)]
pub struct Scenarios(pub Vec<Scenario>);

/// A scheduler list such as `os,learn:own@cpu` (pinlearn-experiment's parser).
#[derive(Clone, Debug, PartialEq)]
pub struct Schedulers(pub Vec<Scheduler>);

pub fn parse_scenarios(s: &str) -> Result<Scenarios, String> {
    Scenario::parse_list(s).map(Scenarios).map_err(|e| e.to_string())
}

pub fn parse_scenario(s: &str) -> Result<Scenario, String> {
    s.parse().map_err(|e: pinlearn_experiment::ScenarioError| e.to_string())
}

pub fn parse_schedulers(s: &str) -> Result<Schedulers, String> {
    Scheduler::parse_list(s).map(Schedulers).map_err(|e| e.to_string())
}

fn parse_policy(s: &str) -> Result<PolicyChoice, String> {
    s.parse().map_err(|e: EngineError| e.to_string())
}

fn parse_objective(s: &str) -> Result<Objective, String> {
    s.parse().map_err(|e| format!("{e}"))
}

pub fn parse_cpus(s: &str) -> Result<CpuSet, String> {
    let set = CpuSet::parse_list(s).map_err(|e| e.to_string())?;
    if set.is_empty() {
        return Err("empty CPU list: give CPUs such as 0-3,8".into());
    }
    Ok(set)
}

/// Prints help and version as clap does; every other error as one line
/// (clap's own first line) and status 2.
pub fn report_clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                2
            } else {
                0
            })
        }
        _ => {
            eprintln!("pinlearn: {} (see pinlearn --help)", one_line(&e.render().to_string()));
            ExitCode::from(2)
        }
    }
}

/// clap's error message in one line: its first line, and where that ends
/// with a colon (the arguments missing, the values possible), the indented
/// lines that follow it.
fn one_line(text: &str) -> String {
    let mut lines = text.lines().skip_while(|l| l.trim().is_empty());
    let first = lines
        .next()
        .unwrap_or("invalid arguments")
        .trim_start_matches("error: ")
        .trim_end();
    if !first.ends_with(':') {
        return first.to_string();
    }
    let listed: Vec<&str> = lines
        .take_while(|l| l.starts_with(' ') && !l.trim().is_empty())
        .map(str::trim)
        .collect();
    if listed.is_empty() {
        first.trim_end_matches(':').to_string()
    } else {
        format!("{first} {}", listed.join(", "))
    }
}
