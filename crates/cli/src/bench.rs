//! `pinlearn bench`'s flags, parsed here into `pinlearn_bench::BenchOptions`
//! (scenarios and schedulers with pinlearn-experiment's parsers), then run
//! or described (`--dry-run`).

use std::path::PathBuf;

use clap::Args;
use pinlearn_bench::{BenchOptions, LoadSession, Matrix};
use pinlearn_report::Output;
use pinlearn_topology::CpuSet;

use crate::args::{Scenarios, Schedulers, parse_cpus, parse_output, parse_preload, parse_scenarios, parse_schedulers};
use crate::failure::Failure;
use pinlearn_engine::preload::Preload;

/// Runs the papers' experiment matrix: workloads x scenarios x schedulers,
/// repeated and interleaved.
#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// Workloads to run, comma-separated: aco, aco-spin, pipeline, blackscholes,
    /// swaptions, binpack, stream, heat, fib [default: all]
    #[arg(long, value_delimiter = ',', value_name = "NAME")]
    pub workload: Vec<String>,
    /// Arguments for `pinlearn work NAME` replacing the preset's (one workload only)
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub workload_args: Option<String>,
    /// Multiply each preset's amount of work by F (runs about F times as long; the
    /// learner's first probe comes after ~4.2 s unless Linux shows a blind spot, so most of
    /// its wins need runs of 10 s or more)
    #[arg(long, value_name = "F")]
    pub scale: Option<f64>,
    /// The workloads report no heartbeats (pinlearn sees them as unmodified programs)
    #[arg(long)]
    pub no_heartbeats: bool,
    /// Run this program as the one workload, e.g. "./solver input.txt" (quoted as in a
    /// shell); its completion time is its run from start to exit
    #[arg(long, value_name = "CMD", conflicts_with_all = ["workload", "workload_args", "scale"])]
    pub command: Option<String>,
    /// The environment variable that tells --command its number of threads
    #[arg(long, value_name = "NAME", default_value = "OMP_NUM_THREADS", requires = "command")]
    pub threads_env: String,
    /// Schedulers, comma-separated: os, static (or bound), learn[:OBJECTIVE], bubbles, bubbles+learn, best-static, each but
    /// best-static with an optional @METRIC [default: os,static,learn; --matrix quick
    /// os,learn; full adds best-static]
    #[arg(long, value_parser = parse_schedulers, value_name = "LIST")]
    pub schedulers: Option<Schedulers>,
    /// Scenarios, comma-separated: A.1 ... C.3, A.D ... C.D (threads per core A 4, B 2, C 1;
    /// load 1 none, 2 half of every node's cores, 3 that from a third of the run, D moving
    /// between nodes or halves) [default: C.1,C.2]
    #[arg(long, value_parser = parse_scenarios, value_name = "LIST", conflicts_with = "matrix")]
    pub scenarios: Option<Scenarios>,
    /// A predefined matrix: quick (C.1, C.2) or full (A.1 ... C.3 and D)
    #[arg(long)]
    pub matrix: Option<Matrix>,
    /// Runs per scheduler and scenario
    #[arg(long, default_value_t = BenchOptions::default().repeat)]
    pub repeat: usize,
    /// Only use these CPUs (list syntax such as 0-3,8), within the bench's own
    #[arg(long, value_parser = parse_cpus, value_name = "LIST")]
    pub cpus: Option<CpuSet>,
    /// A `pinlearn run --config` file for every managed run (the learner's tunables)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// TOML rules putting the workload's threads in bubbles (as `run --bubbles`), for the
    /// bubbles and bubbles+learn runs
    #[arg(long, value_name = "FILE")]
    pub bubbles: Option<PathBuf>,
    /// As `run --preload`: heartbeats for every managed run; threads (the thread-creation
    /// tree as nested bubbles) for the bubbles and bubbles+learn runs
    #[arg(long, value_name = "PARTS", value_parser = parse_preload)]
    pub preload: Option<Preload>,
    /// Use this topology instead of the machine's (as `run --topology`): the scenarios'
    /// cores and nodes, and every managed run's; an hwloc synthetic string (needs
    /// --topology-map) or an lstopo XML file
    #[arg(long, value_name = "SPEC", conflicts_with = "cpus")]
    pub topology: Option<String>,
    /// Real CPUs the PUs of a synthetic --topology stand for, in order
    #[arg(long, value_parser = parse_cpus, value_name = "LIST", requires = "topology")]
    pub topology_map: Option<CpuSet>,
    /// Session of the background load: own (another user's job: Linux's autogroup
    /// shares CPU between it and the workload as groups) or same (thread by thread)
    #[arg(long, default_value = "own")]
    pub load_session: LoadSession,
    /// best-static tries at most this many distinct pinnings per scenario (else it is skipped)
    #[arg(long, default_value_t = BenchOptions::default().best_static_max, value_name = "N")]
    pub best_static_max: usize,
    /// Write every run and the summaries as JSON to FILE (- for stdout; the tables then go to stderr)
    #[arg(long, value_parser = parse_output, value_name = "FILE")]
    pub json: Option<Output>,
    /// Write the tables as Markdown to FILE (- for stdout)
    #[arg(long, value_parser = parse_output, value_name = "FILE")]
    pub markdown: Option<Output>,
    /// Draw SVG plots: FILE-WORKLOAD-times.svg, FILE-WORKLOAD-SCENARIO-speed.svg
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Print the plan (cells, schedulers, repeats, load schedules, time) and run nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Print only the tables (no progress)
    #[arg(long, short)]
    pub quiet: bool,
}

impl BenchArgs {
    pub fn to_options(&self) -> BenchOptions {
        BenchOptions {
            workloads: self.workload.clone(),
            workload_args: self.workload_args.clone(),
            scale: self.scale,
            no_heartbeats: self.no_heartbeats,
            command: self.command.clone(),
            threads_env: self.threads_env.clone(),
            schedulers: self.schedulers.clone().map(|list| list.0),
            scenarios: self.scenarios.clone().map(|list| list.0),
            matrix: self.matrix,
            repeat: self.repeat,
            cpus: self.cpus.clone(),
            config: self.config.clone(),
            bubbles: self.bubbles.clone(),
            preload: self.preload,
            topology: self.topology.clone(),
            topology_map: self.topology_map.clone(),
            load_session: self.load_session,
            best_static_max: self.best_static_max,
            json: self.json.clone(),
            markdown: self.markdown.clone(),
            plot: self.plot.clone(),
            quiet: self.quiet,
        }
    }
}

/// `pinlearn bench`: every run goes through this very binary.
pub fn run(args: &BenchArgs) -> Result<(), Failure> {
    let exe =
        std::env::current_exe().map_err(|e| Failure::Runtime(format!("cannot find the pinlearn executable: {e}")))?;
    let options = args.to_options();
    if args.dry_run {
        print!("{}", pinlearn_bench::plan(&options, &exe)?.describe());
        return Ok(());
    }
    pinlearn_bench::run(&options, &exe)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        bench: BenchArgs,
    }

    fn parse(args: &[&str]) -> Result<BenchArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("bench").chain(args.iter().copied())).map(|c| c.bench)
    }

    #[test]
    fn options_parse_with_hyphenated_workload_args() {
        let args = parse(&[
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
            "--json",
            "-",
        ])
        .expect("valid");
        let options = args.to_options();
        assert_eq!(options.workloads, ["aco"]);
        assert_eq!(options.workload_args.as_deref(), Some("--iterations 10 --sync spin"));
        assert_eq!(options.repeat, 2);
        assert_eq!(options.schedulers.map(|s| s.len()), Some(2));
        assert_eq!(options.json, Some(Output::Stdout));
        assert!(parse(&["--scenarios", "C.1", "--matrix", "quick"]).is_err());
        assert_eq!(parse(&["--matrix", "full"]).expect("valid").matrix, Some(Matrix::Full));
    }

    #[test]
    fn bad_names_are_refused_by_the_shared_parsers() {
        for (args, needle) in [
            (vec!["--scenarios", "Z.9"], "unknown scenario \"Z.9\""),
            (vec!["--schedulers", "fastest"], "unknown scheduler \"fastest\""),
            (vec!["--matrix", "huge"], "unknown matrix"),
            (vec!["--load-session", "other"], "unknown load session"),
        ] {
            let err = parse(&args).expect_err(needle).to_string();
            assert!(err.contains(needle), "{args:?}: {err}");
        }
    }

    #[test]
    fn a_command_replaces_the_presets_and_names_its_thread_variable() {
        let options = parse(&["--command", "./solver 'a b'", "--threads-env", "NTHREADS"])
            .expect("valid")
            .to_options();
        assert_eq!(options.command.as_deref(), Some("./solver 'a b'"));
        assert_eq!(options.threads_env, "NTHREADS");
        let default = parse(&["--command", "./solver"]).expect("valid").to_options();
        assert_eq!(default.threads_env, "OMP_NUM_THREADS");
        for args in [
            vec!["--command", "./solver", "--workload", "aco"],
            vec!["--command", "./solver", "--scale", "2"],
            vec!["--threads-env", "NTHREADS"],
        ] {
            assert!(parse(&args).is_err(), "{args:?}");
        }
    }
}
