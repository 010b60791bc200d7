//! What a bench found: its setup, calibration and best-static searches
//! beside the shared run records and summaries (pinlearn-experiment), and
//! their forms for people and programs.
//!
//! ```text
//!   RunRecord (one per run) ──summarise()──► Summary: median, mean, dev of completion_s,
//!        │                                   mean speed, difference to os's median in %,
//!        │                                   paired: median of time / os's time of the same
//!        │                                   repeat, with its 95% interval (pinlearn-experiment)
//!        │                                         │
//!        │                     ┌───────────────────┼──────────────────────┐
//!        ▼                     ▼                   ▼                      ▼
//!   --json {"setup", "calibration",        tables (stdout text,    --plot: per workload the
//!     "best_static", "runs", "summary"}    --markdown)             completion-time bars, per
//!                                                                  scenario the speed lines
//!                                                                  (from the median run's trace)
//! ```

use crate::BenchError;
use pinlearn_experiment::{RunRecord, Summary, summary_table};
use pinlearn_report::{Stats, bar_plot, speed_plot, stats};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

impl BenchResults {
    /// Tables for a terminal: one per workload, then best-static's picks.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (name, command) in &self.setup.workloads {
            out += &format!("\n{name}: {command}\n");
            out += &summary_table(&self.summary, name).to_text();
        }
        out += &self.best_static_notes("  ");
        out
    }

    /// The Markdown report: setup, one table per workload, best-static's picks.
    pub fn to_markdown(&self) -> String {
        let s = &self.setup;
        let mut out = String::from("# pinlearn bench results\n\n");
        out += &format!("- date: {}\n- command: `{}`\n", s.date, s.command);
        out += &format!(
            "- CPUs {} ({} cores, per node {:?}); background load: {}, {} session; autogroup {}\n",
            s.cpus,
            s.cores,
            s.cores_per_node,
            s.load_generator,
            s.load_session,
            s.autogroup.as_deref().unwrap_or("unknown")
        );
        out += &format!(
            "- {} interleaved repeats per scheduler; times are the workload's own completion time in seconds; \
             \"vs os\" compares medians (negative: faster than Linux alone); \"paired vs os\" is the median \
             over the repeats of the time divided by the os run of the same repeat, with its distribution-free \
             95% interval (min..max, 94%, with 5 repeats); \"manager CPU\" is the manager's CPU time as a share \
             of the workload's; \"OS-placed\" is the share of the periods the learner's do-no-harm guard left \
             to Linux\n",
            s.repeat
        );
        for (name, command) in &s.workloads {
            out += &format!("\n## {name}\n\n`{command}`\n\n");
            out += &summary_table(&self.summary, name).to_markdown();
        }
        let notes = self.best_static_notes("- ");
        if !notes.is_empty() {
            out += "\n## best-static\n\n";
            out += &notes;
        }
        out
    }

    fn best_static_notes(&self, bullet: &str) -> String {
        let mut out = String::new();
        for record in &self.best_static {
            let what = match (&record.chosen, &record.skipped) {
                (Some(chosen), _) => format!("chose {chosen} out of {} tried", record.tried.len()),
                (None, Some(reason)) => format!("skipped: {reason}"),
                (None, None) => "nothing tried".to_string(),
            };
            out += &format!("{bullet}{} {}: best-static {what}\n", record.workload, record.scenario);
        }
        out
    }

    /// The JSON document `--json` writes.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("bench results serialise to JSON")
    }
}

/// The files `--plot PREFIX.svg` writes: `PREFIX-WORKLOAD-times.svg` and
/// `PREFIX-WORKLOAD-SCENARIO-speed.svg`.
pub fn plot_path(prefix: &Path, workload: &str, scenario: Option<&str>) -> PathBuf {
    let stem = prefix.with_extension("");
    let suffix = match scenario {
        Some(scenario) => format!("-{workload}-{scenario}-speed.svg"),
        None => format!("-{workload}-times.svg"),
    };
    PathBuf::from(format!("{}{suffix}", stem.display()))
}

/// Draws the plots; `traces[i]` is the trace of `results.runs[i]`, if kept.
/// Returns the files written.
pub fn write_plots(
    results: &BenchResults,
    prefix: &Path,
    traces: &[Option<PathBuf>],
) -> Result<Vec<PathBuf>, BenchError> {
    let mut written = Vec::new();
    for (workload, _) in &results.setup.workloads {
        let bars: Vec<(String, Stats)> = results
            .summary
            .iter()
            .filter(|s| &s.workload == workload)
            .filter_map(|s| {
                let walls: Vec<f64> = results
                    .runs
                    .iter()
                    .filter(|r| r.workload == s.workload && r.scenario == s.scenario && r.scheduler == s.scheduler)
                    .filter_map(|r| r.completion_s)
                    .collect();
                stats(&walls).map(|st| (format!("{} {}", s.scenario, s.scheduler), st))
            })
            .collect();
        if bars.is_empty() {
            continue;
        }
        let path = plot_path(prefix, workload, None);
        bar_plot(&path, &format!("{workload}: completion time"), &bars)?;
        written.push(path);

        for scenario in &results.setup.scenarios {
            let mut series = Vec::new();
            for summary in results
                .summary
                .iter()
                .filter(|s| &s.workload == workload && &s.scenario == scenario)
            {
                // The run whose time is closest to the median represents the scheduler.
                let median_run = results
                    .runs
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| {
                        r.workload == summary.workload
                            && r.scenario == summary.scenario
                            && r.scheduler == summary.scheduler
                    })
                    .min_by(|(_, a), (_, b)| {
                        let distance = |run: &RunRecord| match (run.completion_s, summary.median_s) {
                            (Some(time), Some(median)) => (time - median).abs(),
                            _ => f64::INFINITY,
                        };
                        distance(a).total_cmp(&distance(b))
                    });
                let Some(trace) = median_run.and_then(|(i, _)| traces.get(i).cloned().flatten()) else {
                    continue;
                };
                series.push((summary.scheduler.clone(), running_average_speed(&trace)?));
            }
            if series.iter().all(|(_, points)| points.is_empty()) {
                continue;
            }
            let path = plot_path(prefix, workload, Some(scenario));
            let title = format!("{workload} {scenario}: running-average speed per thread (median run)");
            speed_plot(&path, &title, pinlearn_report::Axes::default(), &series)?;
            written.push(path);
        }
    }
    Ok(written)
}

/// From a `pinlearn run --trace` CSV: per period, the mean speed of the
/// worker threads (every thread but a process's main thread), then the
/// running average of those means over the periods so far, against time.
pub fn running_average_speed(trace: &Path) -> Result<Vec<(f64, f64)>, BenchError> {
    let unreadable = |reason: String| BenchError::Output(format!("unreadable trace {}: {reason}", trace.display()));
    let mut reader = csv::Reader::from_path(trace).map_err(|e| unreadable(e.to_string()))?;
    let headers = reader.headers().map_err(|e| unreadable(e.to_string()))?.clone();
    let column = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| unreadable(format!("no {name} column")))
    };
    let (time_col, period_col, pid_col, tid_col, speed_col) = (
        column("time_s")?,
        column("period")?,
        column("pid")?,
        column("tid")?,
        column("speed")?,
    );
    // period -> (time, sum of speeds, count)
    let mut periods: BTreeMap<u64, (f64, f64, usize)> = BTreeMap::new();
    for record in reader.records() {
        let record = record.map_err(|e| unreadable(e.to_string()))?;
        let field = |i: usize| record.get(i).unwrap_or("");
        if field(pid_col) == field(tid_col) {
            continue;
        }
        let (Ok(period), Ok(time), Ok(speed)) = (
            field(period_col).parse::<u64>(),
            field(time_col).parse::<f64>(),
            field(speed_col).parse::<f64>(),
        ) else {
            continue;
        };
        let entry = periods.entry(period).or_insert((time, 0.0, 0));
        entry.1 += speed;
        entry.2 += 1;
    }
    let mut sum = 0.0;
    Ok(periods
        .values()
        .enumerate()
        .map(|(k, &(time, total, count))| {
            sum += total / count as f64;
            (time, sum / (k + 1) as f64)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_average_speed_skips_main_threads_and_averages_over_periods() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("trace.csv");
        std::fs::write(
            &path,
            "time_s,period,pid,tid,name,place,speed,utility\n\
             0.05,0,10,10,pinlearn,0-1,0.01,\n\
             0.05,0,10,11,aco-0,0,0.4,0.4\n\
             0.05,0,10,12,aco-1,1,0.6,0.6\n\
             0.10,1,10,11,aco-0,0,1.0,1.0\n\
             0.10,1,10,12,aco-1,1,,\n",
        )
        .expect("write trace");
        // Period means 0.5 and 1.0; running averages 0.5 and 0.75.
        assert_eq!(
            running_average_speed(&path).expect("readable"),
            vec![(0.05, 0.5), (0.10, 0.75)]
        );
    }

    #[test]
    fn plot_paths_derive_from_the_prefix() {
        let prefix = Path::new("/tmp/out/bench.svg");
        assert_eq!(
            plot_path(prefix, "aco", None),
            Path::new("/tmp/out/bench-aco-times.svg")
        );
        assert_eq!(
            plot_path(prefix, "aco", Some("C.2")),
            Path::new("/tmp/out/bench-aco-C.2-speed.svg")
        );
    }
}
