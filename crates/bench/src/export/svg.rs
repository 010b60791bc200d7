//! `--plot PREFIX.svg`: per workload the completion-time bars of every
//! (scenario, scheduler), per scenario the running-average speed of the
//! median run of each scheduler (from its `--trace` CSV).

use crate::{BenchError, BenchResults};
use pinlearn_experiment::RunRecord;
use pinlearn_report::{Stats, bar_plot, speed_plot, stats};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
