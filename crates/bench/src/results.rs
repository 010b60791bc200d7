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
    /// What one node's memory serves, measured with a memory-bound workload
    /// when the bench runs one (`pinlearn sim --calibrate` models it).
    pub memory_bandwidth: Option<MemoryBandwidth>,
    pub repeat: usize,
    pub schedulers: Vec<String>,
    pub scenarios: Vec<String>,
    /// (name, command line) of every workload.
    pub workloads: Vec<(String, String)>,
}

/// A node's memory bandwidth in cores' worth: how much faster a workload
/// that does little but stream memory ran on the first node's cores than
/// on one of them, Linux placing its threads, no load, no manager.
#[derive(Clone, Debug, Serialize)]
pub struct MemoryBandwidth {
    pub workload: String,
    pub threads: usize,
    /// Its runs on the first core alone, in the order made.
    pub one_core_s: Vec<f64>,
    /// Its runs on the first node's cores, each right after one on the
    /// first core.
    pub node_s: Vec<f64>,
    pub node_cores: usize,
    /// The median of `one_core_s` over the median of `node_s`: the cores'
    /// worth of streaming the node's memory served (as many as the node's
    /// cores: no limit seen).
    pub cores_worth: f64,
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
