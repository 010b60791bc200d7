//! The papers' benchmark applications, on real public data, runnable as
//! `pinlearn work NAME [OPTIONS]`; every workload reports its progress
//! through the heartbeat channel so pinlearn can measure it from outside.
//!
//! ```text
//!   pinlearn work aco --threads 4 --json -   (parsed by the binary)
//!        │  Work { workload: Workload::Aco(aco::Options), threads, seed, progress }
//!        ▼
//!   run(&cmd) ─► Common::new(threads, seed, quiet) ─► aco::run(&opts, &common)
//!        │                                              │ spawn_workers("aco", ..) → threads "aco-0".."aco-3"
//!        │                                              │ work_done(units) → heartbeat::beat + progress bar
//!        │                                              ▼
//!        │                                            Report (workload fields)
//!        ▼
//!   {"workload": "aco", "threads": 4, "seed": 1, "wall_s": 2.3, ...Report fields}
//!        ├─► --json FILE: written as one object by the CLI
//!        └─► human_summary(&value): a few aligned lines
//! ```
//!
//! | workload | models | data |
//! |---|---|---|
//! | `aco` | ant colony optimisation, task farm + barriers (papers 000, 003) | OR-Library SMTWTP |
//! | `pipeline` | stages of unequal work over bounded queues | generated items |
//! | `stream` | STREAM triad, memory bandwidth, first touch | generated arrays |
//! | `blackscholes` | PARSEC blackscholes, data-parallel pricing (paper 000 "BLA") | PARSEC optionData |
//! | `swaptions` | PARSEC swaptions, Monte Carlo HJM (paper 000 "SWA") | PARSEC presets |
//! | `binpack` | parallel bin-packing search | Scholl et al. sets 1-3 |
//! | `churn` | a thread started for every task (the manager's stress case) | none |
//! | `heat` | heat conduction, stripes per thread + a barrier per step (paper 001 §5.2) | generated plate |
//! | `fib` | divide-and-conquer Fibonacci, a tree of threads (paper 001 §5.1) | none |
//!
//! Each workload's module doc says what it models, its options and its data.

pub mod aco;
pub mod barrier;
pub mod binpack;
pub mod blackscholes;
pub mod churn;
pub mod common;
pub mod fib;
pub mod heat;
pub mod orlib;
pub mod pipeline;
pub mod stream;
pub mod swaptions;

pub use barrier::SyncMode;
pub use common::{Common, Mode, WorkError};

use serde_json::{Map, Value};
use std::time::Instant;

/// One workload run: the workload with its options, and what every
/// workload shares.
#[derive(Debug, Clone)]
pub struct Work {
    pub workload: Workload,
    /// Worker threads; `None`: the CPUs this process may run on.
    pub threads: Option<usize>,
    /// Seed of every random choice (same seed, same result).
    pub seed: u64,
    /// Draw a progress bar on stderr (when it is a terminal).
    pub progress: bool,
    /// Report progress through a pinlearn heartbeat channel (off: the
    /// program reports nothing, like an unmodified one).
    pub heartbeats: bool,
}

/// The workloads, with their own options.
#[derive(Debug, Clone)]
pub enum Workload {
    Aco(aco::Options),
    Pipeline(pipeline::Options),
    Stream(stream::Options),
    Blackscholes(blackscholes::Options),
    Swaptions(swaptions::Options),
    Binpack(binpack::Options),
    Churn(churn::Options),
    Heat(heat::Options),
    Fib(fib::Options),
}

impl Workload {
    /// The subcommand name.
    pub fn name(&self) -> &'static str {
        match self {
            Workload::Aco(_) => "aco",
            Workload::Pipeline(_) => "pipeline",
            Workload::Stream(_) => "stream",
            Workload::Blackscholes(_) => "blackscholes",
            Workload::Swaptions(_) => "swaptions",
            Workload::Binpack(_) => "binpack",
            Workload::Churn(_) => "churn",
            Workload::Heat(_) => "heat",
            Workload::Fib(_) => "fib",
        }
    }
}

/// The default thread count: the CPUs this process may run on (affinity mask
/// and cgroup quota), 1 if unknown.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn to_fields(report: impl serde::Serialize) -> Map<String, Value> {
    match serde_json::to_value(report) {
        Ok(Value::Object(fields)) => fields,
        // Reports are structs of numbers, strings and lists: always a JSON object.
        Ok(other) => Map::from_iter([("result".to_string(), other)]),
        Err(e) => Map::from_iter([("result_error".to_string(), Value::String(e.to_string()))]),
    }
}

/// Runs the workload in this process and returns its result: `workload`,
/// `threads`, `seed`, `wall_s`, then the workload's own fields (a workload
/// that reports `threads` itself, like `pipeline`, which may need more
/// threads than asked, overrides the requested count).
pub fn run(cmd: &Work) -> Result<Value, WorkError> {
    let threads = cmd.threads.unwrap_or_else(default_threads);
    let mut common = Common::new(threads, cmd.seed, !cmd.progress)?;
    if !cmd.heartbeats {
        common = common.without_heartbeats();
    }
    let started = Instant::now();
    let fields = match &cmd.workload {
        Workload::Aco(opts) => to_fields(aco::run(opts, &common)?),
        Workload::Pipeline(opts) => to_fields(pipeline::run(opts, &common)?),
        Workload::Stream(opts) => to_fields(stream::run(opts, &common)?),
        Workload::Blackscholes(opts) => to_fields(blackscholes::run(opts, &common)?),
        Workload::Swaptions(opts) => to_fields(swaptions::run(opts, &common)?),
        Workload::Binpack(opts) => to_fields(binpack::run(opts, &common)?),
        Workload::Churn(opts) => to_fields(churn::run(opts, &common)?),
        Workload::Heat(opts) => to_fields(heat::run(opts, &common)?),
        Workload::Fib(opts) => to_fields(fib::run(opts, &common)?),
    };
    let wall_s = started.elapsed().as_secs_f64();
    let mut result = Map::new();
    result.insert("workload".into(), cmd.workload.name().into());
    result.insert("threads".into(), threads.into());
    result.insert("seed".into(), cmd.seed.into());
    result.insert("wall_s".into(), wall_s.into());
    result.extend(fields);
    Ok(Value::Object(result))
}

/// A short human-readable summary of a [`run`] result: a headline, then one
/// aligned `field  value` line per result field (lists shown by length), with
/// no final newline.
pub fn human_summary(result: &Value) -> String {
    let Some(fields) = result.as_object() else {
        return result.to_string();
    };
    let text = |key: &str| fields.get(key).map_or_else(|| "?".to_string(), plain);
    let mut summary = format!(
        "{} finished in {} s on {} threads (seed {})",
        text("workload"),
        fields
            .get("wall_s")
            .and_then(Value::as_f64)
            .map_or_else(|| "?".into(), |s| format!("{s:.2}")),
        text("threads"),
        text("seed"),
    );
    let shown: Vec<(&String, &Value)> = fields
        .iter()
        .filter(|(key, _)| !["workload", "wall_s", "threads", "seed"].contains(&key.as_str()))
        .collect();
    let width = shown.iter().map(|(key, _)| key.len()).max().unwrap_or(0);
    for (key, value) in shown {
        summary.push_str(&format!("\n  {key:<width$}  {}", plain(value)));
    }
    summary
}

/// A JSON value as a person would write it: strings unquoted, floats
/// rounded, lists and objects summarised.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        Value::Number(n) if n.is_f64() => n.as_f64().map_or_else(|| n.to_string(), |f| format!("{f:.4}")),
        Value::Array(items) if items.iter().all(|item| !item.is_array() && !item.is_object()) && items.len() <= 8 => {
            items.iter().map(plain).collect::<Vec<_>>().join(",")
        }
        Value::Array(items) => format!("[{} values]", items.len()),
        Value::Object(map) => format!("{{{} fields}}", map.len()),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(workload: Workload, threads: usize) -> Work {
        Work {
            workload,
            threads: Some(threads),
            seed: 1,
            progress: false,
            heartbeats: true,
        }
    }

    #[test]
    fn result_holds_common_and_workload_fields() {
        let cmd = work(
            Workload::Stream(stream::Options {
                size: stream::ArraySize::Times(0.01),
                sweeps: stream::Sweeps::Runs(2),
            }),
            2,
        );
        let result = run(&cmd).expect("runs");
        assert_eq!(result["workload"], "stream");
        assert_eq!(result["threads"], 2);
        assert_eq!(result["seed"], 1);
        assert!(result["wall_s"].as_f64().is_some_and(|s| s > 0.0));
        assert_eq!(result["runs"], 2);
        let summary = human_summary(&result);
        assert!(summary.starts_with("stream finished in "), "{summary}");
        assert!(summary.contains("\n  runs "), "{summary}");
        assert!(summary.contains("bandwidth_gbs"), "{summary}");
    }

    #[test]
    fn pipeline_reports_the_threads_it_really_used() {
        let options = pipeline::Options {
            items: 20,
            rounds: 1,
            ..pipeline::Options::default()
        };
        let result = run(&work(Workload::Pipeline(options), 1)).expect("runs");
        assert_eq!(result["threads"], 3, "one thread per stage at least");
    }

    #[test]
    fn zero_threads_is_a_clear_error() {
        let cmd = work(Workload::Stream(stream::Options::default()), 0);
        assert!(matches!(run(&cmd), Err(WorkError::BadInput(_))));
    }

    #[test]
    fn summary_shows_lists_by_length() {
        let value = serde_json::json!({"workload": "x", "wall_s": 1.0, "threads": 1, "seed": 1,
            "short": [1, 2], "long": (0..20).collect::<Vec<_>>(), "gap_pct": null});
        let summary = human_summary(&value);
        assert!(summary.contains("short    1,2"), "{summary}");
        assert!(summary.contains("long     [20 values]"), "{summary}");
        assert!(summary.contains("gap_pct  -"), "{summary}");
    }
}
