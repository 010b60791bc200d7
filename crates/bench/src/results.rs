//! What a bench found: its setup, calibration and best-static searches
//! beside the shared run records and summaries (pinlearn-experiment). The
//! forms for people and programs are in `export`, one module per format.

use pinlearn_experiment::{RunRecord, Summary};
use serde::Serialize;

/// A calibration run: the workload alone (no manager, no load).
#[derive(Clone, Debug, Serialize)]
pub struct CalibrationRecord {
    pub workload: String,
    /// A, B or C.
    pub level: String,
    pub threads: usize,
    pub wall_s: f64,
    pub worker_threads: Vec<String>,
}

/// best-static's search in one scenario: every candidate's time, or why
/// there was no search.
#[derive(Clone, Debug, Serialize)]
pub struct BestStaticRecord {
    pub workload: String,
    pub scenario: String,
    /// (assignment, wall_s) of every candidate tried, in the order tried.
    pub tried: Vec<(String, f64)>,
    pub chosen: Option<String>,
    pub skipped: Option<String>,
}

/// How the bench was set up, for reading results later.
#[derive(Clone, Debug, Serialize)]
pub struct Setup {
    pub date: String,
    pub command: String,
    pub pinlearn: String,
    pub cpus: String,
    pub cores: usize,
    /// Cores of each NUMA node (the scenarios load the first half of each).
    pub cores_per_node: Vec<usize>,
    pub load_generator: String,
    pub load_session: String,
    /// /proc/sys/kernel/sched_autogroup_enabled, if readable.
    pub autogroup: Option<String>,
    /// The CPU's model name (`model name` in /proc/cpuinfo), if it gives one:
    /// results from different hosts differ for reasons no scenario names.
    pub cpu_model: Option<String>,
    /// The last-level caches that serve the CPUs the bench may use, in MiB (hwloc),
    /// if known: whether a workload's data lives in them decides how much
    /// running its threads side by side is worth.
    pub last_level_cache_mib: Option<u64>,
    pub repeat: usize,
    pub schedulers: Vec<String>,
    pub scenarios: Vec<String>,
    /// (name, command line) of every workload.
    pub workloads: Vec<(String, String)>,
}

/// Everything `--json` writes.
#[derive(Clone, Debug, Serialize)]
pub struct BenchResults {
    pub setup: Setup,
    pub calibration: Vec<CalibrationRecord>,
    pub best_static: Vec<BestStaticRecord>,
    pub runs: Vec<RunRecord>,
    pub summary: Vec<Summary>,
}
