//! `pinlearn sim`'s flags: parsed here into `pinlearn_sim::SimOptions`
//! (scenarios and schedulers with pinlearn-experiment's parsers, durations
//! with the one duration syntax), then run or described (`--dry-run`).
//!
//! ```text
//!   argv ─► SimArgs ─► to_options() ─► SimOptions ─► --dry-run: Plan::describe
//!                                                 └► pinlearn_sim::run
//! ```

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use pinlearn_engine::{Metric, Settings};
use pinlearn_experiment::{LoadSession, Scenario};
use pinlearn_sim::calibrate::RealBench;
use pinlearn_sim::{MachineParams, SimOptions, WorkloadKind, WorkloadSpec};
use pinlearn_topology::Topology;

use crate::args::{
    Scenarios, Schedulers, parse_duration, parse_metric, parse_output, parse_scenario, parse_scenarios,
    parse_schedulers,
};
use crate::failure::Failure;

/// `pinlearn sim`: run the engine's policies on a simulated NUMA machine.
#[derive(Args, Debug, Clone)]
pub struct SimArgs {
    /// The machine: an hwloc synthetic string or an lstopo XML file
    #[arg(long, default_value = "node:2 core:14 pu:1")]
    pub topology: String,
    /// Application threads
    #[arg(long, default_value_t = WorkloadSpec::default().threads)]
    pub threads: usize,
    /// The simulated program: independent, barrier, barrier-spin, pipeline, heat or fib (--threads leaves of a tree of threads created during the run)
    #[arg(long, default_value_t = WorkloadSpec::default().kind)]
    pub workload: WorkloadKind,
    /// Scenarios, comma-separated: A.1 ... C.3, A.D ... C.D (threads per core A 4, B 2, C 1;
    /// load 1 none, 2 half of every node's cores, 3 that from a third of the run, D moving
    /// between nodes or halves) [default: A.2,B.3,C.1,D]
    #[arg(long, value_parser = parse_scenarios, conflicts_with = "matrix", value_name = "LIST")]
    pub scenarios: Option<Scenarios>,
    /// Run the whole matrix (A.1 ... C.3 and D)
    #[arg(long, value_parser = ["full"])]
    pub matrix: Option<String>,
    /// Schedulers, comma-separated: os, static (or bound), best-static, learn[:OBJECTIVE], bubbles, bubbles+learn, each but
    /// best-static with an optional @METRIC
    #[arg(long, value_parser = parse_schedulers, default_value = "os,static,best-static,learn", value_name = "LIST")]
    pub schedulers: Schedulers,
    /// Runs per (scenario, scheduler), with seeds SEED, SEED+1, ... (SEED from --config, default 1)
    #[arg(long, default_value_t = 3)]
    pub seeds: u64,
    /// Simulated time the program takes on its idle cores (sizes the work)
    #[arg(long, value_parser = parse_duration, default_value = "60s", value_name = "DUR")]
    pub duration: Duration,
    /// Write the model and one record per (scenario, scheduler, seed) as JSON to FILE (- for stdout)
    #[arg(long, value_parser = parse_output, value_name = "FILE")]
    pub json: Option<pinlearn_report::Output>,
    /// Draw the running-average speed over time of every scheduler (SVG)
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// The scenario to plot [default: the first]
    #[arg(long, value_parser = parse_scenario, value_name = "NAME")]
    pub plot_scenario: Option<Scenario>,
    /// Write one run's trace as CSV: a row per thread per period, the columns of `pinlearn run --trace`
    /// (the simulated threads' keys as tids); the options must make one run
    #[arg(long, value_name = "FILE.csv", conflicts_with = "calibrate")]
    pub trace: Option<PathBuf>,
    /// Print the plan (cells, schedulers, seeds, load schedules, time) and run nothing
    #[arg(long)]
    pub dry_run: bool,
    /// No progress bar or notes on stderr
    #[arg(long, short)]
    pub quiet: bool,
    /// Core-level period T_CPU (overrides --config)
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub interval: Option<Duration>,
    /// Engine settings file (TOML, as `pinlearn config` prints)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// What a speed sample measures: auto (= useful), useful, cpu, heartbeat or instructions [default: the settings']
    #[arg(long, value_parser = parse_metric)]
    pub metric: Option<Metric>,
    /// CFS weight (and relative work) of the threads, cycled, e.g. 4,3,3,2,2,1
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub weights: Option<Vec<f64>>,
    /// barrier-spin: spin this long before blocking, e.g. 2ms (with --grain, the real program's spin: that share
    /// of its work between two waits) [default: spin until released]
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub spin: Option<Duration>,
    /// barrier, barrier-spin, heat, pipeline: how long the real program a run stands for works between two
    /// waits (a round, an item), e.g. 5ms; it sets how much its waking threads preempt another session's program
    /// (--load-session own), how soon a pipeline's queues fill while a consumer waits for that program, and, for
    /// barrier-spin, the turns its threads take on a shared core, every spin but the last one's wasted [default:
    /// enough to take all they can, as sub-millisecond rounds do; no queue fills; no turns]; the simulated rounds
    /// (100ms) and items (25ms) keep their length
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub grain: Option<Duration>,
    /// The simulated program reports its progress, as the papers' workloads do with heartbeats, and the
    /// learner's guard compares the work done per second; by default it reports nothing, like a program nobody
    /// changed, and the guard compares the CPU time its threads got in working code [default: with --calibrate,
    /// as each bench workload ran: heartbeats unless its command says --no-heartbeats]
    #[arg(long)]
    pub heartbeats: bool,
    /// pipeline: relative work per item of each stage
    #[arg(long, value_delimiter = ',', default_value = "2,1,1", value_name = "LIST")]
    pub stages: Vec<f64>,
    /// pipeline: queue capacity between stages, in items (with --grain, of the real program's queues too)
    #[arg(long, default_value_t = WorkloadSpec::default().queue_capacity)]
    pub queue_capacity: u64,
    /// Session of the background load: same (its threads compete thread against thread
    /// with the program's) or own (another user's job: with autogroup, Linux shares a
    /// core between the two sessions as groups first, as `pinlearn bench` loads)
    /// [default: same; with --calibrate, the bench's]
    #[arg(long, value_name = "SESSION")]
    pub load_session: Option<LoadSession>,
    /// Weight of the background load: on a loaded core with --load-session same
    /// [default: 2, two CPU-bound threads]; of its whole session, split over the cores
    /// it loads, with own [default: 1, one session of nice-0 threads]
    #[arg(long, value_name = "W")]
    pub background: Option<f64>,
    /// Remote/local memory cost ratio F: a thread with memory intensity m runs
    /// 1 + (F-1)·m times slower with its memory on another node
    #[arg(long, default_value_t = MachineParams::default().numa_factor)]
    pub numa_factor: f64,
    /// Memory intensity m of every thread, in [0, 1]
    #[arg(long, default_value_t = WorkloadSpec::default().memory_intensity)]
    pub memory_intensity: f64,
    /// Standard deviation of the multiplicative measurement noise
    #[arg(long, default_value_t = MachineParams::default().noise)]
    pub noise: f64,
    /// CPU time a thread loses when it changes core (4x when it changes node)
    #[arg(long, value_parser = parse_duration, default_value = "250us", value_name = "DUR")]
    pub migration_cost: Duration,
    /// Period of the modelled OS balancer within a node (4x across nodes)
    #[arg(long, value_parser = parse_duration, default_value = "16ms", value_name = "DUR")]
    pub balance_interval: Duration,
    /// Linux's automatic NUMA balancing: a thread's memory follows it to a node once its
    /// CPU time there exceeds its CPU time anywhere else by this much (2s: about two of
    /// the kernel's 1 s scan periods), or off: memory stays where it was first touched
    #[arg(long, value_parser = parse_duration_or_off, default_value = "off", value_name = "DUR|off")]
    pub numa_balancing: DurationOrOff,
    /// Linux's turns on crowded cores: a core of a node that has found a busier one for
    /// this long without evening them out takes one of its threads anyway (the kernel's
    /// failed balancing), so CPU-bound threads share the crowded cores over time, or off
    #[arg(long, value_parser = parse_duration_or_off, default_value = "100ms", value_name = "DUR|off")]
    pub rotate_after: DurationOrOff,
    /// How much a barrier round's work varies (barrier, barrier-spin, heat): each thread's is
    /// drawn in (1 - J, 1] of its share every round, so threads arrive apart and the early
    /// ones sleep, as on a real machine; 0: all arrive at once
    #[arg(long, value_name = "J", default_value_t = MachineParams::default().round_jitter)]
    pub round_jitter: f64,
    /// Memory bandwidth of each node, in cores' worth of threads of memory intensity 1 running
    /// flat out: threads whose memory is on a node and ask for more share it (measure it as a
    /// memory-bound program's time on one core over its time on a whole node), or off
    /// [default: off; with --calibrate, what the bench measured, if it did]
    #[arg(long, value_parser = parse_bandwidth_or_off, value_name = "B|off")]
    pub memory_bandwidth: Option<BandwidthOrOff>,
    /// Runs simulated in parallel [default: the CPUs available]
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Compare the model with a real machine: simulate every cell of this `pinlearn bench --json`
    /// file (os, static, learn) on its topology, threads and load session, and print both sides'
    /// ratios to os (the model flags and --config, --seeds and --json apply); given more than once,
    /// the files' runs are pooled (one matrix on one machine, measured several times), and each
    /// file is also held to the others by the same rule (how near the real runs come to each other)
    #[arg(long, value_name = "BENCH.json")]
    pub calibrate: Vec<PathBuf>,
}

impl SimArgs {
    /// The library's options; a bad topology or config file is bad input.
    pub fn to_options(&self) -> Result<SimOptions, Failure> {
        let topology = Topology::from_spec(&self.topology).map_err(|e| Failure::BadInput(e.to_string()))?;
        let mut settings = match &self.config {
            Some(path) => Settings::from_toml_file(path)?,
            None => Settings::default(),
        };
        if let Some(interval) = self.interval {
            settings.interval = interval;
        }
        let mut options = SimOptions::new(topology);
        options.workload = WorkloadSpec {
            kind: self.workload,
            threads: self.threads,
            weights: self.weights.clone().unwrap_or_else(|| vec![1.0]),
            duration_s: self.duration.as_secs_f64(),
            spin_s: self.spin.map(|d| d.as_secs_f64()),
            stages: self.stages.clone(),
            queue_capacity: self.queue_capacity.max(1),
            memory_intensity: self.memory_intensity,
            grain_s: self.grain.map(|d| d.as_secs_f64()),
            main_thread: false,
            heartbeats: self.heartbeats,
        };
        options.scenarios = self.scenarios.clone().map(|list| list.0);
        options.full_matrix = self.matrix.is_some();
        options.schedulers = self.schedulers.0.clone();
        options.seeds = self.seeds;
        options.settings = settings;
        options.metric = self.metric;
        options.params = MachineParams {
            numa_factor: self.numa_factor,
            noise: self.noise,
            core_migration_s: self.migration_cost.as_secs_f64(),
            node_migration_s: 4.0 * self.migration_cost.as_secs_f64(),
            balance_interval_s: self.balance_interval.as_secs_f64(),
            load_session: self.load_session.unwrap_or(LoadSession::Same),
            numa_balancing_s: self.numa_balancing.0.map(|d| d.as_secs_f64()),
            rotate_after_s: self.rotate_after.0.map(|d| d.as_secs_f64()),
            round_jitter: self.round_jitter,
            memory_bandwidth: self.memory_bandwidth.and_then(|b| b.0),
            ..MachineParams::default()
        };
        options.background_weight = self.background;
        options.json = self.json.clone();
        options.plot = self.plot.clone();
        options.plot_scenario = self.plot_scenario;
        options.trace = self.trace.clone();
        options.quiet = self.quiet;
        if let Some(jobs) = self.jobs {
            options.jobs = jobs;
        }
        Ok(options)
    }
}

/// A time, or `None` for `off` (`--numa-balancing`, `--rotate-after`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DurationOrOff(pub Option<Duration>);

fn parse_duration_or_off(s: &str) -> Result<DurationOrOff, String> {
    if s == "off" {
        return Ok(DurationOrOff(None));
    }
    let after = parse_duration(s)?;
    if after.is_zero() {
        return Err("give a positive time, such as 2s, or off".into());
    }
    Ok(DurationOrOff(Some(after)))
}

/// A node's memory bandwidth, or `None` for `off` (`--memory-bandwidth`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BandwidthOrOff(pub Option<f64>);

fn parse_bandwidth_or_off(s: &str) -> Result<BandwidthOrOff, String> {
    if s == "off" {
        return Ok(BandwidthOrOff(None));
    }
    match s.parse::<f64>() {
        Ok(b) if b.is_finite() && b > 0.0 => Ok(BandwidthOrOff(Some(b))),
        _ => Err("give a positive number of cores' worth, such as 1.4, or off".into()),
    }
}

/// `pinlearn sim`.
pub fn run(args: &SimArgs) -> Result<(), Failure> {
    let options = args.to_options()?;
    if !args.calibrate.is_empty() {
        return calibrate(&args.calibrate, &options, args.load_session, args.memory_bandwidth);
    }
    if args.dry_run {
        let plan = options.plan()?;
        print!("{}", plan.describe(options.jobs));
        return Ok(());
    }
    pinlearn_sim::run(&options)?;
    Ok(())
}

#[cfg(test)]
#[path = "sim_tests.rs"]
mod tests;

/// `pinlearn sim --calibrate BENCH.json [--calibrate MORE.json ...]`: the
/// table on stdout (stderr when `--json -` takes stdout), the comparison as
/// JSON. A `--memory-bandwidth` given (`off` too) stands instead of the
/// one the bench files measured.
fn calibrate(
    paths: &[PathBuf],
    options: &SimOptions,
    session: Option<LoadSession>,
    bandwidth: Option<BandwidthOrOff>,
) -> Result<(), Failure> {
    let mut pooled: Option<RealBench> = None;
    let mut files = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::BadInput(format!("cannot read the bench file {}: {e}", path.display())))?;
        let bad = |e: pinlearn_sim::SimError| Failure::BadInput(format!("{}: {e}", path.display()));
        let real = RealBench::parse(&text).map_err(bad)?;
        files.push(real.clone());
        pooled = Some(match pooled {
            None => real,
            Some(before) => before.pool(real).map_err(bad)?,
        });
    }
    let mut real = pooled.expect("called with at least one file");
    if let Some(given) = bandwidth {
        real.memory_bandwidths = given.0.into_iter().collect();
    }
    if let Some(output) = &options.json {
        output.check_writable().map_err(Failure::BadInput)?;
    }
    let mut calibration =
        pinlearn_sim::calibrate::calibrate(&real, &options.settings, &options.params, options.seeds, session)?;
    calibration.reproduction = pinlearn_sim::calibrate::reproduction(&files)?;
    let table = calibration.table();
    match &options.json {
        Some(output) => {
            if output.is_stdout() {
                eprint!("{table}");
            } else {
                print!("{table}");
            }
            let json = serde_json::to_string_pretty(&calibration).expect("the calibration serialises");
            output.write(&json).map_err(|e| Failure::Runtime(e.to_string()))?;
        }
        None => print!("{table}"),
    }
    Ok(())
}
