//! What a bench found: one record per run, one summary per (workload,
//! scenario, scheduler), and their forms for people and programs.
//!
//! ```text
//!   RunRecord (one per run) ──summarise()──► SummaryRecord: median, mean, dev of wall_s,
//!        │                                   mean speed, difference to os's median in %,
//!        │                                   paired: median of wall / os's wall of the same
//!        │                                   repeat, with its 95% interval
//!        │                                         │
//!        │                     ┌───────────────────┼──────────────────────┐
//!        ▼                     ▼                   ▼                      ▼
//!   --json {"setup", "calibration",        tables (stdout text,    --plot: per workload the
//!     "best_static", "runs", "summary"}    --markdown)             completion-time bars, per
//!                                                                  scenario the speed lines
//!                                                                  (from the median run's trace)
//! ```

use crate::BenchError;
use pinlearn_report::{Stats, Table, bar_plot, median_interval, speed_plot, stats};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One measured run.
#[derive(Clone, Debug, Serialize)]
pub struct RunRecord {
    pub workload: String,
    pub scenario: String,
    pub scheduler: String,
    /// 0-based repeat number.
    pub repeat: usize,
    pub threads: usize,
    /// The workload's completion time in seconds.
    pub wall_s: f64,
    /// Mean over the worker threads of their mean speed; null for best-static.
    pub mean_speed: Option<f64>,
    /// The metric the speed is in (`cpu`, `instructions`, `heartbeat`).
    pub metric: Option<String>,
    /// CPU time of the manager (pinlearn run), or of the bench's pinner for best-static.
    pub manager_cpu_s: f64,
    /// CPU time of the workload process.
    pub workload_cpu_s: f64,
    /// 100 x manager_cpu_s / workload_cpu_s.
    pub manager_cpu_pct: f64,
    pub repins: Option<u64>,
    /// learn: share of the periods the do-no-harm guard left to the OS.
    pub os_share: Option<f64>,
    /// best-static: threads per core of each thread class.
    pub assignment: Option<String>,
}

/// The runs of one (workload, scenario, scheduler).
#[derive(Clone, Debug, Serialize)]
pub struct SummaryRecord {
    pub workload: String,
    pub scenario: String,
    pub scheduler: String,
    pub runs: usize,
    pub median_s: f64,
    pub mean_s: f64,
    /// Sample standard deviation of wall_s (n - 1); 0 for one run.
    pub dev_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    pub mean_speed: Option<f64>,
    pub metric: Option<String>,
    /// 100 (median_s - os median_s) / os median_s: negative is faster than
    /// Linux alone; null without `os` runs.
    pub diff_vs_os_pct: Option<f64>,
    /// Means over the runs.
    pub manager_cpu_s: f64,
    pub workload_cpu_s: f64,
    /// 100 x total manager CPU / total workload CPU.
    pub manager_cpu_pct: f64,
    /// learn: mean share of the periods the guard left to the OS.
    pub os_share: Option<f64>,
    /// Runs are interleaved, so repeat i of a scheduler ran next to repeat i
    /// of `os`: 100 (median of wall_s / os wall_s over the repeats - 1).
    /// Less sensitive to drift than the difference of medians.
    pub paired_vs_os_pct: Option<f64>,
    /// Distribution-free interval of that median ratio, in % like it.
    pub paired_vs_os_ci_pct: Option<[f64; 2]>,
    /// The interval's coverage (0.95, or less with fewer than 6 repeats).
    pub paired_ci_level: Option<f64>,
}

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
    pub first_half_cpus: String,
    pub second_half_cpus: String,
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
    pub summary: Vec<SummaryRecord>,
}

/// One summary per (workload, scenario, scheduler), in the order the runs
/// first appear; the difference to `os` is taken against the `os` summary
/// of the same workload and scenario.
pub fn summarise(runs: &[RunRecord]) -> Vec<SummaryRecord> {
    let mut order: Vec<(String, String, String)> = Vec::new();
    let mut groups: BTreeMap<(String, String, String), Vec<&RunRecord>> = BTreeMap::new();
    for run in runs {
        let key = (run.workload.clone(), run.scenario.clone(), run.scheduler.clone());
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(run);
    }
    let mut summaries: Vec<SummaryRecord> = order
        .iter()
        .filter_map(|key| {
            let group = &groups[key];
            let walls: Vec<f64> = group.iter().map(|r| r.wall_s).collect();
            let time = stats(&walls)?;
            let speeds: Vec<f64> = group.iter().filter_map(|r| r.mean_speed).collect();
            let os_shares: Vec<f64> = group.iter().filter_map(|r| r.os_share).collect();
            let n = group.len() as f64;
            let manager: f64 = group.iter().map(|r| r.manager_cpu_s).sum();
            let workload: f64 = group.iter().map(|r| r.workload_cpu_s).sum();
            Some(SummaryRecord {
                workload: key.0.clone(),
                scenario: key.1.clone(),
                scheduler: key.2.clone(),
                runs: time.n,
                median_s: time.median,
                mean_s: time.mean,
                dev_s: time.dev,
                min_s: time.min,
                max_s: time.max,
                mean_speed: stats(&speeds).map(|s| s.mean),
                metric: group.iter().find_map(|r| r.metric.clone()),
                diff_vs_os_pct: None,
                manager_cpu_s: manager / n,
                workload_cpu_s: workload / n,
                manager_cpu_pct: percent(manager, workload),
                os_share: stats(&os_shares).map(|s| s.mean),
                paired_vs_os_pct: None,
                paired_vs_os_ci_pct: None,
                paired_ci_level: None,
            })
        })
        .collect();
    let os_medians: BTreeMap<(String, String), f64> = summaries
        .iter()
        .filter(|s| s.scheduler == "os")
        .map(|s| ((s.workload.clone(), s.scenario.clone()), s.median_s))
        .collect();
    for summary in &mut summaries {
        if let Some(&os) = os_medians.get(&(summary.workload.clone(), summary.scenario.clone())) {
            summary.diff_vs_os_pct = (os > 0.0).then(|| 100.0 * (summary.median_s - os) / os);
        }
        if summary.scheduler == "os" {
            continue;
        }
        let os_key = (summary.workload.clone(), summary.scenario.clone(), "os".to_string());
        let own_key = (
            summary.workload.clone(),
            summary.scenario.clone(),
            summary.scheduler.clone(),
        );
        let (Some(os_runs), Some(own_runs)) = (groups.get(&os_key), groups.get(&own_key)) else {
            continue;
        };
        let ratios: Vec<f64> = own_runs
            .iter()
            .filter_map(|run| {
                let os = os_runs.iter().find(|os| os.repeat == run.repeat)?;
                (os.wall_s > 0.0).then(|| run.wall_s / os.wall_s)
            })
            .collect();
        let pct = |ratio: f64| 100.0 * (ratio - 1.0);
        summary.paired_vs_os_pct = stats(&ratios).map(|s| pct(s.median));
        if let Some(ci) = median_interval(&ratios, 0.95) {
            summary.paired_vs_os_ci_pct = Some([pct(ci.low), pct(ci.high)]);
            summary.paired_ci_level = Some(ci.level);
        }
    }
    summaries
}

fn percent(part: f64, whole: f64) -> f64 {
    if whole > 0.0 { 100.0 * part / whole } else { 0.0 }
}

/// The papers' table for one workload: per scenario and scheduler the
/// completion time (median, mean, deviation), the mean speed per thread,
/// the difference to `os` and the manager's CPU time against the workload's.
pub fn workload_table(summaries: &[SummaryRecord], workload: &str) -> Table {
    let os_metric: BTreeMap<&str, Option<&str>> = summaries
        .iter()
        .filter(|s| s.workload == workload && s.scheduler == "os")
        .map(|s| (s.scenario.as_str(), s.metric.as_deref()))
        .collect();
    let rows = summaries
        .iter()
        .filter(|s| s.workload == workload)
        .map(|s| {
            let speed = match (s.mean_speed, s.metric.as_deref()) {
                (None, _) => "—".to_string(),
                // Name the metric when it is not the one `os` measured in.
                (Some(v), metric) if os_metric.get(s.scenario.as_str()).is_some_and(|m| *m != metric) => {
                    format!("{v:.3} ({})", metric.unwrap_or("?"))
                }
                (Some(v), _) => format!("{v:.3}"),
            };
            let diff = match s.diff_vs_os_pct {
                Some(_) if s.scheduler == "os" => "—".to_string(),
                Some(d) => format!("{d:+.1}%"),
                None => "—".to_string(),
            };
            vec![
                s.scenario.clone(),
                s.scheduler.clone(),
                s.runs.to_string(),
                format!("{:.3}", s.median_s),
                format!("{:.3}", s.mean_s),
                format!("{:.3}", s.dev_s),
                speed,
                diff,
                match (s.paired_vs_os_pct, s.paired_vs_os_ci_pct) {
                    (Some(p), Some([low, high])) => format!("{p:+.1}% [{low:+.1}, {high:+.1}]"),
                    _ => "—".to_string(),
                },
                format!("{:.2}%", s.manager_cpu_pct),
                s.os_share.map_or("—".to_string(), |v| format!("{:.0}%", 100.0 * v)),
            ]
        })
        .collect();
    Table {
        headers: [
            "scenario",
            "scheduler",
            "runs",
            "median s",
            "mean s",
            "dev s",
            "mean speed",
            "vs os",
            "paired vs os [CI]",
            "manager CPU",
            "OS-placed",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

impl BenchResults {
    /// Tables for a terminal: one per workload, then best-static's picks.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (name, command) in &self.setup.workloads {
            out += &format!("\n{name}: {command}\n");
            out += &workload_table(&self.summary, name).to_text();
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
            "- CPUs {} ({} cores); background load: {} on the first half (CPUs {}) / second half (CPUs {}), {} session; autogroup {}\n",
            s.cpus,
            s.cores,
            s.load_generator,
            s.first_half_cpus,
            s.second_half_cpus,
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
            out += &workload_table(&self.summary, name).to_markdown();
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

    /// Writes the JSON document.
    pub fn write_json(&self, path: &Path) -> Result<(), BenchError> {
        let text = serde_json::to_string_pretty(self).map_err(|e| BenchError::Output {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        write_file(path, &(text + "\n"))
    }
}

pub fn write_file(path: &Path, text: &str) -> Result<(), BenchError> {
    std::fs::write(path, text).map_err(|e| BenchError::Output {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
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
                    .map(|r| r.wall_s)
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
                        (a.wall_s - summary.median_s)
                            .abs()
                            .total_cmp(&(b.wall_s - summary.median_s).abs())
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
    let unreadable = |reason: String| BenchError::Output {
        path: trace.display().to_string(),
        reason: format!("unreadable trace: {reason}"),
    };
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

    fn run(scenario: &str, scheduler: &str, repeat: usize, wall_s: f64, speed: Option<f64>) -> RunRecord {
        RunRecord {
            workload: "aco".into(),
            scenario: scenario.into(),
            scheduler: scheduler.into(),
            repeat,
            threads: 2,
            wall_s,
            mean_speed: speed,
            metric: speed.map(|_| "cpu".into()),
            manager_cpu_s: 0.01,
            workload_cpu_s: 2.0,
            manager_cpu_pct: 0.5,
            repins: None,
            os_share: None,
            assignment: None,
        }
    }

    #[test]
    fn paired_differences_use_the_os_run_of_the_same_repeat() {
        // os drifts (2 s, then 4 s); learn takes 0.9, 1.1, 1.05, 0.95, 1.0
        // times its os partner: median ratio 1.0, and with 5 pairs the
        // interval is min..max (0.9..1.1), covering 93.75%. Repeat 5 has no
        // os run and is left out. static takes 1.2 x os every time: paired
        // +20% exactly, while its median (2.4 s, among 2.4 2.4 2.4 4.8 4.8)
        // is +20% of os's median (2 s) only by luck of the drift.
        let mut runs = Vec::new();
        for (repeat, factor) in [0.9, 1.1, 1.05, 0.95, 1.0].into_iter().enumerate() {
            let os = if repeat < 3 { 2.0 } else { 4.0 };
            runs.push(run("C.1", "os", repeat, os, None));
            runs.push(run("C.1", "learn", repeat, factor * os, None));
            runs.push(run("C.1", "static", repeat, 1.2 * os, None));
        }
        runs.push(run("C.1", "learn", 5, 9.0, None));
        let s = summarise(&runs);
        let learn = s.iter().find(|s| s.scheduler == "learn").expect("learn");
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(learn.paired_vs_os_pct.unwrap(), 0.0), "{learn:?}");
        let [low, high] = learn.paired_vs_os_ci_pct.unwrap();
        assert!(close(low, -10.0) && close(high, 10.0), "{learn:?}");
        assert!(close(learn.paired_ci_level.unwrap(), 0.9375));
        let fixed = s.iter().find(|s| s.scheduler == "static").expect("static");
        assert!(close(fixed.paired_vs_os_pct.unwrap(), 20.0));
        assert_eq!(
            fixed.paired_vs_os_ci_pct.map(|ci| ci.map(|v| v.round())),
            Some([20.0, 20.0])
        );
        let os = s.iter().find(|s| s.scheduler == "os").expect("os");
        assert_eq!(os.paired_vs_os_pct, None);
    }

    #[test]
    fn summaries_follow_hand_computed_statistics() {
        let runs = vec![
            run("C.2", "os", 0, 4.0, Some(0.5)),
            run("C.2", "learn", 0, 2.0, Some(0.9)),
            run("C.2", "learn", 1, 3.0, Some(0.7)),
            run("C.2", "os", 1, 6.0, Some(0.5)),
            run("C.2", "os", 2, 5.0, Some(0.6)),
            run("C.2", "learn", 2, 2.5, Some(0.8)),
            run("C.1", "learn", 0, 1.0, None),
        ];
        let s = summarise(&runs);
        let names: Vec<(&str, &str)> = s.iter().map(|s| (s.scenario.as_str(), s.scheduler.as_str())).collect();
        assert_eq!(names, [("C.2", "os"), ("C.2", "learn"), ("C.1", "learn")]);
        let os = &s[0];
        // 4, 5, 6: median 5, mean 5, dev sqrt((1 + 0 + 1) / 2) = 1.
        assert_eq!((os.runs, os.median_s, os.mean_s, os.dev_s), (3, 5.0, 5.0, 1.0));
        assert_eq!(os.diff_vs_os_pct, Some(0.0));
        let learn = &s[1];
        // 2, 2.5, 3: median 2.5 -> (2.5 - 5) / 5 = -50%.
        assert_eq!(learn.median_s, 2.5);
        assert!((learn.dev_s - 0.5).abs() < 1e-12);
        assert_eq!(learn.diff_vs_os_pct, Some(-50.0));
        assert!((learn.mean_speed.expect("speed") - 0.8).abs() < 1e-12);
        assert!((learn.manager_cpu_pct - 0.5).abs() < 1e-12);
        // No os run in C.1: no difference.
        assert_eq!(s[2].diff_vs_os_pct, None);
        assert_eq!(s[2].mean_speed, None);
    }

    #[test]
    fn the_table_has_one_row_per_summary_with_the_papers_columns() {
        let mut runs = vec![
            run("C.2", "os", 0, 4.0, Some(0.5)),
            run("C.2", "learn", 0, 3.0, Some(0.9)),
            run("C.2", "learn", 1, 3.0, Some(0.9)),
        ];
        runs[1].os_share = Some(0.2);
        runs[2].os_share = Some(0.3);
        let table = workload_table(&summarise(&runs), "aco");
        assert_eq!(table.headers.len(), 11);
        assert_eq!(table.rows.len(), 2);
        assert_eq!(table.rows[0][7], "—");
        assert_eq!(table.rows[1][7], "-25.0%");
        assert_eq!(table.rows[1][6], "0.900");
        assert_eq!(table.rows[0][8], "—");
        assert_eq!(table.rows[1][8], "-25.0% [-25.0, -25.0]", "repeat 1 has no os partner");
        assert_eq!(table.rows[0][10], "—", "os has no guard");
        assert_eq!(table.rows[1][10], "25%", "mean of the runs' OS shares");
        assert!(workload_table(&summarise(&runs), "stream").rows.is_empty());
    }

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
