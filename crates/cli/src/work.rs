//! `pinlearn work NAME [OPTIONS]`: the command line of the benchmark
//! workloads. Each workload's flags become its `pinlearn_workloads` options
//! (whose `Default` holds the defaults shown in `--help`); the library runs it.
//!
//! ```text
//!   argv ─► WorkArgs { workload: WorkloadArgs::Aco(AcoArgs), threads, seed, json, quiet }
//!              │ into_work()
//!              ▼
//!   pinlearn_workloads::Work ─► run() ─► JSON report ─► --json FILE (- = stdout) | summary on stdout
//! ```

use std::time::Duration;

use clap::{Args, Subcommand};
use pinlearn_workloads::{
    SyncMode, Work, Workload, aco, binpack, blackscholes, churn, fib, heat, pipeline, stream, swaptions,
};

use crate::args::parse_duration;

/// `pinlearn work`: one workload and the options every workload shares.
#[derive(Args, Debug, Clone)]
pub struct WorkArgs {
    #[command(subcommand)]
    pub workload: WorkloadArgs,
    /// Worker threads [default: the CPUs this process may run on]
    #[arg(long, global = true)]
    pub threads: Option<usize>,
    /// Seed of every random choice (same seed, same result)
    #[arg(long, global = true, default_value_t = 1)]
    pub seed: u64,
    /// Write the result as one JSON object to FILE (- for stdout)
    #[arg(long, global = true, value_name = "FILE", value_parser = crate::args::parse_output)]
    pub json: Option<pinlearn_report::Output>,
    /// Hide the progress bar and the summary
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Report no progress to pinlearn (no heartbeat channel), like an unmodified program
    #[arg(long, global = true)]
    pub no_heartbeats: bool,
}

/// The workloads, with their own options.
#[derive(Subcommand, Debug, Clone)]
pub enum WorkloadArgs {
    /// Ant colony optimisation of weighted tardiness (OR-Library), threads meet at barriers
    Aco(AcoArgs),
    /// Stages of unequal work connected by bounded queues
    Pipeline(PipelineArgs),
    /// STREAM triad over arrays far larger than the caches
    Stream(StreamArgs),
    /// PARSEC blackscholes: European option pricing
    Blackscholes(BlackscholesArgs),
    /// PARSEC swaptions: Monte Carlo pricing of swaptions (HJM model)
    Swaptions(SwaptionsArgs),
    /// Bin packing of Scholl et al. instances by parallel local search
    Binpack(BinpackArgs),
    /// A short-lived thread started for every task (the manager's stress case)
    Churn(ChurnArgs),
    /// Heat conduction: a stripe of the plate per thread, a barrier per step (bubbles paper §5.2)
    Heat(HeatArgs),
    /// Divide-and-conquer Fibonacci: a tree of threads, --threads leaves (bubbles paper §5.1)
    Fib(FibArgs),
}

#[derive(Args, Debug, Clone)]
pub struct FibArgs {
    /// Compute fib(N) (at most 64)
    #[arg(long, default_value_t = fib::Options::default().n)]
    pub n: u32,
    /// Sub-calls of size G or less are one unit of work (a heartbeat)
    #[arg(long, default_value_t = fib::Options::default().grain)]
    pub grain: u32,
    /// simple (the OS places the threads), bound (leaf i pins itself to the i-th CPU it may use) or bubbles (bubbles nested as the recursion, placed by pinlearn inside this process)
    #[arg(long, default_value_t = fib::Options::default().mode)]
    pub mode: pinlearn_workloads::Mode,
    /// With --mode bubbles: place on this topology instead of the machine's (an hwloc synthetic string, needs --topology-map, or an lstopo XML file)
    #[arg(long, value_name = "SPEC")]
    pub topology: Option<String>,
    /// Real CPUs the PUs of a synthetic --topology stand for, in order
    #[arg(long, value_parser = crate::args::parse_cpus, value_name = "LIST", requires = "topology")]
    pub topology_map: Option<pinlearn_topology::CpuSet>,
}

#[derive(Args, Debug, Clone)]
pub struct HeatArgs {
    /// Rows of the plate (the first and last are its edges)
    #[arg(long, default_value_t = heat::Options::default().rows)]
    pub rows: usize,
    /// Columns of the plate
    #[arg(long, default_value_t = heat::Options::default().cols)]
    pub cols: usize,
    /// Time steps (each ends with a barrier)
    #[arg(long, default_value_t = heat::Options::default().steps)]
    pub steps: u32,
    /// simple (the OS places the threads), bound (thread i pins itself to the i-th CPU it may use) or bubbles (one bubble per NUMA node, placed by pinlearn inside this process)
    #[arg(long, default_value_t = heat::Options::default().mode)]
    pub mode: pinlearn_workloads::Mode,
    /// With --mode bubbles: place on this topology instead of the machine's (an hwloc synthetic string, needs --topology-map, or an lstopo XML file)
    #[arg(long, value_name = "SPEC")]
    pub topology: Option<String>,
    /// Real CPUs the PUs of a synthetic --topology stand for, in order
    #[arg(long, value_parser = crate::args::parse_cpus, value_name = "LIST", requires = "topology")]
    pub topology_map: Option<pinlearn_topology::CpuSet>,
}

#[derive(Args, Debug, Clone)]
pub struct AcoArgs {
    /// OR-Library instance SET:INDEX, SET wt40, wt50 or wt100, INDEX 1..=125
    #[arg(long, default_value_t = aco::Options::default().instance)]
    pub instance: String,
    /// Ants per iteration, divided evenly over the threads
    #[arg(long, default_value_t = aco::Options::default().ants)]
    pub ants: usize,
    /// Iterations (each ends with two barriers)
    #[arg(long, default_value_t = aco::Options::default().iterations)]
    pub iterations: usize,
    /// How threads wait at the end-of-iteration barriers: block, spin or spin-then-block
    #[arg(long, default_value_t = DisplayMode(aco::Options::default().sync), value_parser = parse_sync)]
    pub sync: DisplayMode,
    /// How long a thread spins before blocking, with --sync spin-then-block
    #[arg(long, value_name = "DUR", default_value = "200us", value_parser = parse_duration)]
    pub spin: Duration,
}

#[derive(Args, Debug, Clone)]
pub struct PipelineArgs {
    /// Relative work of each stage, comma-separated
    #[arg(long, value_delimiter = ',', default_value = "2,1,1")]
    pub stages: Vec<u32>,
    /// How a stage waits on an empty input or a full output queue: block, spin or spin-then-block
    #[arg(long, default_value_t = DisplayMode(pipeline::Options::default().queue), value_parser = parse_sync)]
    pub queue: DisplayMode,
    /// How long a thread spins before blocking, with --queue spin-then-block
    #[arg(long, value_name = "DUR", default_value = "200us", value_parser = parse_duration)]
    pub spin: Duration,
    /// Items pushed through the pipeline
    #[arg(long, default_value_t = pipeline::Options::default().items)]
    pub items: u64,
    /// Capacity of each queue between two stages, in items
    #[arg(long, default_value_t = pipeline::Options::default().capacity)]
    pub capacity: usize,
    /// Mixing rounds applied to each item per unit of stage weight
    #[arg(long, default_value_t = pipeline::Options::default().rounds)]
    pub rounds: u32,
}

#[derive(Args, Debug, Clone)]
pub struct ChurnArgs {
    /// Threads started per second, over all spawners
    #[arg(long, default_value_t = churn::Options::default().rate)]
    pub rate: f64,
    /// How long to keep starting threads
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "10s")]
    pub duration: Duration,
    /// How long each short-lived thread spins
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "100us")]
    pub work: Duration,
    /// How long each short-lived thread then sleeps before it ends
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "0s")]
    pub linger: Duration,
}

#[derive(Args, Debug, Clone)]
pub struct StreamArgs {
    /// Each of the 3 arrays' size in times 64 MiB, or auto: the arrays together 4 x the last-level caches, at least 1
    #[arg(long, value_name = "auto|F", default_value_t = stream::Options::default().size)]
    pub size: stream::ArraySize,
    /// The work: sweep the arrays as often as it takes to count G x 10^9 bytes (24 an element a sweep) [default: 44]
    #[arg(long, value_name = "G", conflicts_with = "runs")]
    pub gigabytes: Option<u32>,
    /// Sweep the arrays N times instead of by --gigabytes
    #[arg(long, value_name = "N")]
    pub runs: Option<u32>,
}

#[derive(Args, Debug, Clone)]
pub struct BlackscholesArgs {
    /// PARSEC input size to generate: in_4, in_16, in_4K, in_16K, in_64K or in_10M
    #[arg(long, default_value = blackscholes::Options::default().input.name())]
    pub input: blackscholes::InputSize,
    /// Price this many options instead of a PARSEC input size
    #[arg(long)]
    pub options: Option<usize>,
    /// Times every option is priced (PARSEC's NUM_RUNS is 100)
    #[arg(long, default_value_t = blackscholes::Options::default().runs)]
    pub runs: u32,
}

#[derive(Args, Debug, Clone)]
pub struct SwaptionsArgs {
    /// PARSEC input set: test, simsmall, simmedium, simlarge or native [default: 64 swaptions, 200000 simulations]
    #[arg(long)]
    pub preset: Option<swaptions::Preset>,
    /// Number of swaptions (overrides the preset)
    #[arg(long)]
    pub swaptions: Option<usize>,
    /// Monte Carlo paths per swaption, rounded up to blocks of 16 (overrides the preset)
    #[arg(long)]
    pub simulations: Option<u64>,
}

#[derive(Args, Debug, Clone)]
pub struct BinpackArgs {
    /// Problem instance, scholl:NAME (e.g. scholl:N1C1W1_A, scholl:N1W1B1R0, scholl:HARD0)
    #[arg(long, default_value_t = binpack::Options::default().instance)]
    pub instance: String,
    /// How long to search (stops earlier when the L2 lower bound is reached)
    #[arg(long, value_name = "DUR", default_value = "4s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Candidate solutions in the pool [default: 8 per thread]
    #[arg(long)]
    pub pool: Option<usize>,
    /// Local-search moves applied to each candidate per cycle
    #[arg(long, default_value_t = binpack::Options::default().moves)]
    pub moves: usize,
    /// Stop after this many optimisation cycles
    #[arg(long)]
    pub max_cycles: Option<u64>,
}

/// A wait mode that clap can show as a default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DisplayMode(pub SyncMode);

impl std::fmt::Display for DisplayMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name())
    }
}

fn parse_sync(text: &str) -> Result<DisplayMode, String> {
    text.parse().map(DisplayMode)
}

impl WorkArgs {
    /// The library's description of the run.
    pub fn to_work(&self) -> Work {
        let workload = match &self.workload {
            WorkloadArgs::Aco(a) => Workload::Aco(aco::Options {
                instance: a.instance.clone(),
                ants: a.ants,
                iterations: a.iterations,
                sync: a.sync.0,
                spin: a.spin,
            }),
            WorkloadArgs::Pipeline(a) => Workload::Pipeline(pipeline::Options {
                stages: a.stages.clone(),
                queue: a.queue.0,
                spin: a.spin,
                items: a.items,
                capacity: a.capacity,
                rounds: a.rounds,
            }),
            WorkloadArgs::Stream(a) => Workload::Stream(stream::Options {
                size: a.size,
                sweeps: match (a.runs, a.gigabytes) {
                    (Some(runs), _) => stream::Sweeps::Runs(runs),
                    (None, Some(gigabytes)) => stream::Sweeps::Gigabytes(gigabytes),
                    (None, None) => stream::Options::default().sweeps,
                },
            }),
            WorkloadArgs::Blackscholes(a) => Workload::Blackscholes(blackscholes::Options {
                input: a.input,
                options: a.options,
                runs: a.runs,
            }),
            WorkloadArgs::Swaptions(a) => Workload::Swaptions(swaptions::Options {
                preset: a.preset,
                swaptions: a.swaptions,
                simulations: a.simulations,
            }),
            WorkloadArgs::Churn(a) => Workload::Churn(churn::Options {
                rate: a.rate,
                duration: a.duration,
                work: a.work,
                linger: a.linger,
            }),
            WorkloadArgs::Heat(a) => Workload::Heat(heat::Options {
                rows: a.rows,
                cols: a.cols,
                steps: a.steps,
                mode: a.mode,
                topology: a.topology.clone(),
                topology_map: a.topology_map.clone(),
            }),
            WorkloadArgs::Fib(a) => Workload::Fib(fib::Options {
                n: a.n,
                grain: a.grain,
                mode: a.mode,
                topology: a.topology.clone(),
                topology_map: a.topology_map.clone(),
            }),
            WorkloadArgs::Binpack(a) => Workload::Binpack(binpack::Options {
                instance: a.instance.clone(),
                duration: a.duration,
                pool: a.pool,
                moves: a.moves,
                max_cycles: a.max_cycles,
            }),
        };
        Work {
            workload,
            threads: self.threads,
            seed: self.seed,
            progress: !self.quiet,
            heartbeats: !self.no_heartbeats,
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
        work: WorkArgs,
    }

    fn parse(args: &[&str]) -> Result<Work, clap::Error> {
        Cli::try_parse_from(std::iter::once("work").chain(args.iter().copied())).map(|c| c.work.to_work())
    }

    #[test]
    fn common_options_go_before_or_after_the_workload() {
        let work = parse(&["--threads", "3", "aco", "--instance", "wt50:2", "--seed", "9"]).expect("parses");
        assert_eq!((work.threads, work.seed, work.progress), (Some(3), 9, true));
        let Workload::Aco(options) = &work.workload else {
            panic!("aco expected, got {:?}", work.workload)
        };
        assert_eq!(options.instance, "wt50:2");
        let work = parse(&["stream", "--size", "0.5", "--quiet"]).expect("parses");
        assert_eq!((work.threads, work.seed, work.progress), (None, 1, false));
        assert!(parse(&["nosuch"]).is_err());
    }

    #[test]
    fn defaults_are_the_librarys() {
        let cases: [(&str, Workload); 9] = [
            ("aco", Workload::Aco(aco::Options::default())),
            ("pipeline", Workload::Pipeline(pipeline::Options::default())),
            ("stream", Workload::Stream(stream::Options::default())),
            ("blackscholes", Workload::Blackscholes(blackscholes::Options::default())),
            ("swaptions", Workload::Swaptions(swaptions::Options::default())),
            ("binpack", Workload::Binpack(binpack::Options::default())),
            ("churn", Workload::Churn(churn::Options::default())),
            ("heat", Workload::Heat(heat::Options::default())),
            ("fib", Workload::Fib(fib::Options::default())),
        ];
        for (name, expected) in cases {
            let work = parse(&[name]).expect(name);
            assert_eq!(work.workload.name(), name);
            assert_eq!(format!("{:?}", work.workload), format!("{expected:?}"), "{name}");
        }
    }

    /// The stream options `args` parse to, or the parse error's text.
    fn stream_options(args: &[&str]) -> Result<stream::Options, String> {
        match parse(args).map(|work| work.workload) {
            Ok(Workload::Stream(options)) => Ok(options),
            Ok(other) => panic!("stream expected, got {other:?}"),
            Err(error) => Err(error.to_string()),
        }
    }

    #[test]
    fn stream_sizes_are_auto_by_default_or_a_positive_number() {
        let size_of = |args: &[&str]| stream_options(args).map(|options| options.size);
        assert_eq!(size_of(&["stream"]), Ok(stream::ArraySize::Auto));
        assert_eq!(size_of(&["stream", "--size", "auto"]), Ok(stream::ArraySize::Auto));
        assert_eq!(size_of(&["stream", "--size", "0.5"]), Ok(stream::ArraySize::Times(0.5)));
        for bad in ["0", "big", "nan"] {
            let error = size_of(&["stream", "--size", bad]).expect_err(bad);
            assert!(error.contains("give auto or a positive number"), "{error}");
        }
    }

    #[test]
    fn stream_sweeps_by_gigabytes_unless_told_the_runs() {
        let sweeps_of = |args: &[&str]| stream_options(args).map(|options| options.sweeps);
        assert_eq!(sweeps_of(&["stream"]), Ok(stream::Sweeps::Gigabytes(44)));
        assert_eq!(
            sweeps_of(&["stream", "--gigabytes", "8"]),
            Ok(stream::Sweeps::Gigabytes(8))
        );
        assert_eq!(sweeps_of(&["stream", "--runs", "20"]), Ok(stream::Sweeps::Runs(20)));
        let error = sweeps_of(&["stream", "--runs", "20", "--gigabytes", "8"]).expect_err("both");
        assert!(error.contains("cannot be used with"), "{error}");
    }

    #[test]
    fn durations_and_words_use_the_shared_syntax() {
        let work = parse(&["binpack", "--duration", "5s"]).expect("5s");
        let Workload::Binpack(options) = work.workload else {
            panic!()
        };
        assert_eq!(options.duration, Duration::from_secs(5));
        let work = parse(&["binpack", "--duration", "1.5s"]).expect("1.5s");
        let Workload::Binpack(options) = work.workload else {
            panic!()
        };
        assert_eq!(options.duration, Duration::from_millis(1500));
        assert!(parse(&["binpack", "--duration", "5"]).is_err(), "a unit is needed");
        let work = parse(&["aco", "--sync", "spin-then-block", "--spin", "1ms"]).expect("parses");
        let Workload::Aco(options) = work.workload else {
            panic!()
        };
        assert_eq!(
            (options.sync, options.spin),
            (SyncMode::SpinThenBlock, Duration::from_millis(1))
        );
        let work = parse(&["pipeline", "--stages", "3,1,2", "--queue", "spin"]).expect("parses");
        let Workload::Pipeline(options) = work.workload else {
            panic!()
        };
        assert_eq!((options.stages, options.queue), (vec![3, 1, 2], SyncMode::Spin));
        assert!(parse(&["aco", "--sync", "nap"]).is_err());
        let work = parse(&["blackscholes", "--input", "in_4K"]).expect("parses");
        let Workload::Blackscholes(options) = work.workload else {
            panic!()
        };
        assert_eq!(options.input.option_count(), 4096);
        assert!(parse(&["blackscholes", "--input", "in_5K"]).is_err());
        let work = parse(&["swaptions", "--preset", "simsmall"]).expect("parses");
        let Workload::Swaptions(options) = work.workload else {
            panic!()
        };
        assert_eq!(options.preset, Some(swaptions::Preset::Simsmall));
        assert!(parse(&["swaptions", "--preset", "huge"]).is_err());
    }
}
