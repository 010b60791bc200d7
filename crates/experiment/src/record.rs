//! What one run of an experiment measured, and the one path from runs to
//! the papers' table, for real runs (`pinlearn bench`) and modelled ones
//! (`pinlearn sim`) alike.
//!
//! ```text
//!   RunRecord (one per run) ──summarise()──► Summary per (workload, scenario, scheduler):
//!        │                                   median, mean, dev, min, max of completion_s
//!        │                                   (pinlearn-report), mean speed, difference to
//!        │                                   os's median in %, paired: median of completion
//!        │                                   / os's completion of the same repeat, with its
//!        │                                   distribution-free interval
//!        ▼
//!   summary_table(summaries, workload) ─► pinlearn_report::Table (text, Markdown)
//! ```
//!
//! Differences to `os` are in % of os's time: negative is faster than the OS.
//! A cell whose runs did not all finish (the simulator's horizon) has no time.

use std::collections::BTreeMap;

use pinlearn_report::{Table, median_interval, stats};
use serde::Serialize;

/// One measured run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunRecord {
    pub workload: String,
    pub scenario: String,
    pub scheduler: String,
    /// 0-based repeat: runs of one repeat are paired with os's run of the same repeat.
    pub repeat: usize,
    /// The seed of the run (the simulator's, or the learner's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    pub threads: usize,
    /// Cores the scenario gave the program.
    pub cores: usize,
    /// Seconds until the program completed; `None` if it did not.
    pub completion_s: Option<f64>,
    /// Mean over the worker threads of their mean speed (None without a manager).
    pub mean_speed: Option<f64>,
    /// The metric the speed is in (`cpu`, `instructions`, `heartbeat`).
    pub metric: Option<String>,
    /// Placements the manager made.
    pub repins: Option<u64>,
    /// learn: share of the periods the do-no-harm guard left to the OS.
    pub os_share: Option<f64>,
    /// Real runs: CPU time of the manager (or of the bench's pinner for best-static).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manager_cpu_s: Option<f64>,
    /// Real runs: CPU time of the workload's processes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload_cpu_s: Option<f64>,
    /// best-static: how the threads were pinned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assignment: Option<String>,
    /// Modelled runs: what only the model knows.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRecord>,
}

/// What the simulator knows of a run beyond its time.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ModelRecord {
    /// Work done per second per thread (core-seconds / s), metric-independent.
    pub mean_progress: f64,
    /// Load-model makespan of the final core assignment (constant-load scenarios).
    pub makespan: Option<f64>,
    /// The optimum of the load model (constant-load scenarios, when proven).
    pub optimal_makespan: Option<f64>,
    /// makespan / optimal_makespan.
    pub makespan_ratio: Option<f64>,
    /// Whether the final assignment is a Nash equilibrium of the load game.
    pub nash: Option<bool>,
    /// First period at which the modal assignment was a Nash equilibrium.
    pub first_nash_period: Option<u64>,
    /// Share of the tracked periods whose modal assignment was a Nash equilibrium.
    pub nash_share: Option<f64>,
    /// Engine periods run.
    pub periods: u64,
    /// Core changes, by the engine or the modelled OS.
    pub migrations: u64,
    pub node_migrations: u64,
    pub balancer_moves: u64,
    /// Threads whose memory moved to another node (NUMA balancing, memory binding).
    pub memory_moves: u64,
    /// The share of the threads' memory accesses to other nodes than their
    /// cores', the mean over the periods (more than one node), and in the
    /// periods the guard's Linux and learner arms placed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_share: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_share_os: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_share_learn: Option<f64>,
}

/// The runs of one (workload, scenario, scheduler).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub workload: String,
    pub scenario: String,
    pub scheduler: String,
    pub runs: usize,
    /// Runs that completed.
    pub finished: usize,
    /// Statistics of completion_s, when every run completed.
    pub median_s: Option<f64>,
    pub mean_s: Option<f64>,
    /// Sample standard deviation (n - 1); 0 for one run.
    pub dev_s: Option<f64>,
    pub min_s: Option<f64>,
    pub max_s: Option<f64>,
    pub mean_speed: Option<f64>,
    pub metric: Option<String>,
    /// 100 (median_s - os median_s) / os median_s: negative is faster than the OS.
    pub diff_vs_os_pct: Option<f64>,
    /// 100 (median over the repeats of completion / os's completion of the same repeat - 1).
    pub paired_vs_os_pct: Option<f64>,
    /// Distribution-free interval of that median ratio, in % like it.
    pub paired_vs_os_ci_pct: Option<[f64; 2]>,
    /// The interval's coverage (0.95, or less with fewer than 6 repeats).
    pub paired_ci_level: Option<f64>,
    /// Real runs: mean CPU seconds of the manager and of the workload per run.
    pub manager_cpu_s: Option<f64>,
    pub workload_cpu_s: Option<f64>,
    /// 100 x total manager CPU / total workload CPU.
    pub manager_cpu_pct: Option<f64>,
    /// learn: mean share of the periods the guard left to the OS.
    pub os_share: Option<f64>,
    /// Modelled runs: mean makespan of the final assignment over the optimum.
    pub makespan_ratio: Option<f64>,
    /// The median completion over the better of the two simple answers in
    /// this cell: min(os median, best-static median), or the os median when
    /// best-static was not run. 1.0 matches the better one; above 1 is the
    /// time lost to it. Not given for os and best-static themselves.
    pub regret: Option<f64>,
}

type CellKey = (String, String, String);

fn key(run: &RunRecord) -> CellKey {
    (run.workload.clone(), run.scenario.clone(), run.scheduler.clone())
}

fn mean(values: &[f64]) -> Option<f64> {
    stats(values).map(|s| s.mean)
}

/// One summary per (workload, scenario, scheduler), in the order the runs
/// first appear; differences are taken against the `os` runs of the same
/// workload and scenario.
pub fn summarise(runs: &[RunRecord]) -> Vec<Summary> {
    let mut order: Vec<CellKey> = Vec::new();
    let mut cells: BTreeMap<CellKey, Vec<&RunRecord>> = BTreeMap::new();
    for run in runs {
        let cell = key(run);
        if !cells.contains_key(&cell) {
            order.push(cell.clone());
        }
        cells.entry(cell).or_default().push(run);
    }
    let mut summaries: Vec<Summary> = order.iter().map(|cell| summarise_cell(cell, &cells[cell])).collect();
    for summary in &mut summaries {
        let os_cell = (summary.workload.clone(), summary.scenario.clone(), "os".to_string());
        let Some(os_runs) = cells.get(&os_cell) else { continue };
        let os_median = summaries_median(os_runs);
        summary.diff_vs_os_pct = match (os_median, summary.median_s) {
            (Some(os), Some(own)) if os > 0.0 => Some(100.0 * (own - os) / os),
            _ => None,
        };
        if summary.scheduler == "os" {
            continue;
        }
        // The best fixed pin measured in the cell: best-static, or the
        // round-robin pin where best-static was not run (then the regret is
        // a lower bound: the best pin is at least that fast).
        let pin = ["best-static", "static"]
            .iter()
            .filter_map(|name| {
                cells
                    .get(&(summary.workload.clone(), summary.scenario.clone(), name.to_string()))
                    .and_then(|runs| summaries_median(runs))
            })
            .reduce(f64::min);
        let better = match (os_median, pin) {
            (Some(os), Some(pin)) => Some(os.min(pin)),
            (os, _) => os,
        };
        if summary.scheduler != "best-static" {
            summary.regret = match (summary.median_s, better) {
                (Some(own), Some(better)) if better > 0.0 => Some(own / better),
                _ => None,
            };
        }
        let own_runs = &cells[&(
            summary.workload.clone(),
            summary.scenario.clone(),
            summary.scheduler.clone(),
        )];
        let ratios: Vec<f64> = own_runs
            .iter()
            .filter_map(|run| {
                let os = os_runs.iter().find(|os| os.repeat == run.repeat)?;
                match (run.completion_s, os.completion_s) {
                    (Some(own), Some(os)) if os > 0.0 => Some(own / os),
                    _ => None,
                }
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

/// The median completion of runs that all finished.
fn summaries_median(runs: &[&RunRecord]) -> Option<f64> {
    let times: Vec<f64> = runs.iter().filter_map(|r| r.completion_s).collect();
    (times.len() == runs.len())
        .then(|| stats(&times).map(|s| s.median))
        .flatten()
}

fn summarise_cell(cell: &CellKey, runs: &[&RunRecord]) -> Summary {
    let times: Vec<f64> = runs.iter().filter_map(|r| r.completion_s).collect();
    let time = (times.len() == runs.len()).then(|| stats(&times)).flatten();
    let speeds: Vec<f64> = runs.iter().filter_map(|r| r.mean_speed).collect();
    let shares: Vec<f64> = runs.iter().filter_map(|r| r.os_share).collect();
    let ratios: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.model.as_ref().and_then(|m| m.makespan_ratio))
        .collect();
    let manager: Vec<f64> = runs.iter().filter_map(|r| r.manager_cpu_s).collect();
    let workload: Vec<f64> = runs.iter().filter_map(|r| r.workload_cpu_s).collect();
    let workload_total: f64 = workload.iter().sum();
    Summary {
        workload: cell.0.clone(),
        scenario: cell.1.clone(),
        scheduler: cell.2.clone(),
        runs: runs.len(),
        finished: times.len(),
        median_s: time.map(|t| t.median),
        mean_s: time.map(|t| t.mean),
        dev_s: time.map(|t| t.dev),
        min_s: time.map(|t| t.min),
        max_s: time.map(|t| t.max),
        mean_speed: mean(&speeds),
        metric: runs.iter().find_map(|r| r.metric.clone()),
        diff_vs_os_pct: None,
        paired_vs_os_pct: None,
        paired_vs_os_ci_pct: None,
        paired_ci_level: None,
        manager_cpu_s: mean(&manager),
        workload_cpu_s: mean(&workload),
        manager_cpu_pct: (!manager.is_empty() && workload_total > 0.0)
            .then(|| 100.0 * manager.iter().sum::<f64>() / workload_total),
        os_share: mean(&shares),
        makespan_ratio: mean(&ratios),
        regret: None,
    }
}

/// The papers' table for one workload: per scenario and scheduler the
/// completion time (median, mean, deviation), the mean speed per thread, the
/// difference to `os` (of medians, and paired), and, where any run has them,
/// the manager's CPU time against the workload's, the guard's OS share and
/// the model's L/L*.
pub fn summary_table(summaries: &[Summary], workload: &str) -> Table {
    let rows: Vec<&Summary> = summaries.iter().filter(|s| s.workload == workload).collect();
    let dash = || "—".to_string();
    let os_metric: BTreeMap<&str, Option<&str>> = rows
        .iter()
        .filter(|s| s.scheduler == "os")
        .map(|s| (s.scenario.as_str(), s.metric.as_deref()))
        .collect();
    let with_manager = rows.iter().any(|s| s.manager_cpu_pct.is_some());
    let with_model = rows.iter().any(|s| s.makespan_ratio.is_some());
    let mut headers: Vec<&str> = vec![
        "scenario",
        "scheduler",
        "runs",
        "median s",
        "mean s",
        "dev s",
        "mean speed",
        "vs os",
        "paired vs os [CI]",
        "regret",
    ];
    if with_manager {
        headers.push("manager CPU");
    }
    headers.push("OS-placed");
    if with_model {
        headers.push("L/L*");
    }
    let time = |value: Option<f64>, s: &Summary| match value {
        Some(v) => format!("{v:.3}"),
        None => format!("{}/{} done", s.finished, s.runs),
    };
    let table_rows = rows
        .iter()
        .map(|s| {
            let speed = match (s.mean_speed, s.metric.as_deref()) {
                (None, _) => dash(),
                // Name the metric when it is not the one `os` measured in.
                (Some(v), metric) if os_metric.get(s.scenario.as_str()).is_some_and(|m| *m != metric) => {
                    format!("{v:.3} ({})", metric.unwrap_or("?"))
                }
                (Some(v), _) => format!("{v:.3}"),
            };
            let mut row = vec![
                s.scenario.clone(),
                s.scheduler.clone(),
                s.runs.to_string(),
                time(s.median_s, s),
                s.mean_s.map_or_else(dash, |v| format!("{v:.3}")),
                s.dev_s.map_or_else(dash, |v| format!("{v:.3}")),
                speed,
                match s.diff_vs_os_pct {
                    Some(d) if s.scheduler != "os" => format!("{d:+.1}%"),
                    _ => dash(),
                },
                match (s.paired_vs_os_pct, s.paired_vs_os_ci_pct) {
                    (Some(p), Some([low, high])) => format!("{p:+.1}% [{low:+.1}, {high:+.1}]"),
                    _ => dash(),
                },
                s.regret.map_or_else(dash, |r| format!("{r:.2}")),
            ];
            if with_manager {
                row.push(s.manager_cpu_pct.map_or_else(dash, |v| format!("{v:.2}%")));
            }
            row.push(s.os_share.map_or_else(dash, |v| format!("{:.0}%", 100.0 * v)));
            if with_model {
                row.push(s.makespan_ratio.map_or_else(dash, |v| format!("{v:.3}")));
            }
            row
        })
        .collect();
    Table {
        headers: headers.into_iter().map(String::from).collect(),
        rows: table_rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(scenario: &str, scheduler: &str, repeat: usize, time: Option<f64>, speed: Option<f64>) -> RunRecord {
        RunRecord {
            workload: "aco".into(),
            scenario: scenario.into(),
            scheduler: scheduler.into(),
            repeat,
            threads: 2,
            cores: 2,
            completion_s: time,
            mean_speed: speed,
            metric: speed.map(|_| "cpu".into()),
            manager_cpu_s: Some(0.01),
            workload_cpu_s: Some(2.0),
            ..RunRecord::default()
        }
    }

    #[test]
    fn paired_differences_use_the_os_run_of_the_same_repeat() {
        // os drifts (2 s, then 4 s); learn takes 0.9, 1.1, 1.05, 0.95, 1.0
        // times its os partner: median ratio 1.0, and with 5 pairs the
        // interval is min..max (0.9..1.1), covering 93.75%. Repeat 5 has no
        // os run and is left out. static takes 1.2 x os every time: paired
        // +20% exactly.
        let mut runs = Vec::new();
        for (repeat, factor) in [0.9, 1.1, 1.05, 0.95, 1.0].into_iter().enumerate() {
            let os = if repeat < 3 { 2.0 } else { 4.0 };
            runs.push(run("C.1", "os", repeat, Some(os), None));
            runs.push(run("C.1", "learn", repeat, Some(factor * os), None));
            runs.push(run("C.1", "static", repeat, Some(1.2 * os), None));
        }
        runs.push(run("C.1", "learn", 5, Some(9.0), None));
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
    fn regret_is_over_the_better_of_linux_and_the_best_fixed_pin() {
        // os 10 s, best-static 8 s, learn 9 s: 9 / min(10, 8) = 1.125.
        // Without any pin the better answer is os: 9 / 10; without
        // best-static, the round-robin pin stands for it.
        let mut runs = Vec::new();
        for repeat in 0..3 {
            runs.push(run("B.2", "os", repeat, Some(10.0), None));
            runs.push(run("B.2", "best-static", repeat, Some(8.0), None));
            runs.push(run("B.2", "learn", repeat, Some(9.0), None));
            runs.push(run("D", "os", repeat, Some(10.0), None));
            runs.push(run("D", "learn", repeat, Some(9.0), None));
            runs.push(run("C.2", "os", repeat, Some(10.0), None));
            runs.push(run("C.2", "static", repeat, Some(7.0), None));
            runs.push(run("C.2", "learn", repeat, Some(9.0), None));
        }
        let s = summarise(&runs);
        let cell = |scenario: &str, scheduler: &str| {
            s.iter()
                .find(|s| s.scenario == scenario && s.scheduler == scheduler)
                .unwrap()
                .regret
        };
        assert_eq!(cell("B.2", "learn"), Some(9.0 / 8.0));
        assert_eq!(cell("D", "learn"), Some(0.9));
        assert_eq!(
            cell("C.2", "learn"),
            Some(9.0 / 7.0),
            "the round-robin pin where best-static was not run"
        );
        assert_eq!(cell("C.2", "static"), Some(1.0));
        assert_eq!(cell("B.2", "os"), None, "no regret for the baselines themselves");
        assert_eq!(cell("B.2", "best-static"), None);
        let table = summary_table(&s, "aco");
        let column = table
            .headers
            .iter()
            .position(|h| h == "regret")
            .expect("a regret column");
        assert_eq!(table.rows[2][column], "1.12");
    }

    #[test]
    fn summaries_follow_hand_computed_statistics() {
        let runs = vec![
            run("C.2", "os", 0, Some(4.0), Some(0.5)),
            run("C.2", "learn", 0, Some(2.0), Some(0.9)),
            run("C.2", "learn", 1, Some(3.0), Some(0.7)),
            run("C.2", "os", 1, Some(6.0), Some(0.5)),
            run("C.2", "os", 2, Some(5.0), Some(0.6)),
            run("C.2", "learn", 2, Some(2.5), Some(0.8)),
            run("C.1", "learn", 0, Some(1.0), None),
        ];
        let s = summarise(&runs);
        let names: Vec<(&str, &str)> = s.iter().map(|s| (s.scenario.as_str(), s.scheduler.as_str())).collect();
        assert_eq!(names, [("C.2", "os"), ("C.2", "learn"), ("C.1", "learn")]);
        let os = &s[0];
        // 4, 5, 6: median 5, mean 5, dev sqrt((1 + 0 + 1) / 2) = 1.
        assert_eq!(
            (os.runs, os.median_s, os.mean_s, os.dev_s),
            (3, Some(5.0), Some(5.0), Some(1.0))
        );
        assert_eq!(os.diff_vs_os_pct, Some(0.0));
        let learn = &s[1];
        // 2, 2.5, 3: median 2.5 -> (2.5 - 5) / 5 = -50%.
        assert_eq!(learn.median_s, Some(2.5));
        assert!((learn.dev_s.unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(learn.diff_vs_os_pct, Some(-50.0));
        assert!((learn.mean_speed.expect("speed") - 0.8).abs() < 1e-12);
        assert!((learn.manager_cpu_pct.unwrap() - 0.5).abs() < 1e-12);
        // No os run in C.1: no difference.
        assert_eq!(s[2].diff_vs_os_pct, None);
        assert_eq!(s[2].mean_speed, None);
    }

    #[test]
    fn a_cell_with_an_unfinished_run_has_no_time() {
        let runs = vec![
            run("A.1", "os", 0, Some(100.0), None),
            run("A.1", "os", 1, Some(110.0), None),
            run("A.1", "static", 0, None, None),
            run("A.1", "static", 1, Some(120.0), None),
        ];
        let s = summarise(&runs);
        assert_eq!((s[1].finished, s[1].runs, s[1].median_s), (1, 2, None));
        assert_eq!(s[1].diff_vs_os_pct, None);
        let table = summary_table(&s, "aco");
        assert_eq!(table.rows[1][3], "1/2 done");
    }

    #[test]
    fn the_table_has_one_row_per_summary_and_only_the_columns_with_data() {
        let mut runs = vec![
            run("C.2", "os", 0, Some(4.0), Some(0.5)),
            run("C.2", "learn", 0, Some(3.0), Some(0.9)),
            run("C.2", "learn", 1, Some(3.0), Some(0.9)),
        ];
        runs[1].os_share = Some(0.2);
        runs[2].os_share = Some(0.3);
        let table = summary_table(&summarise(&runs), "aco");
        assert_eq!(table.headers.len(), 12);
        assert_eq!(table.rows.len(), 2);
        assert_eq!(table.rows[0][7], "—");
        assert_eq!(table.rows[1][7], "-25.0%");
        assert_eq!(table.rows[1][6], "0.900");
        assert_eq!(table.rows[0][8], "—");
        assert_eq!(table.rows[1][8], "-25.0% [-25.0, -25.0]", "repeat 1 has no os partner");
        assert_eq!(table.rows[0][9], "—", "no regret for os itself");
        assert_eq!(table.rows[1][9], "0.75", "3 s over os's 4 s");
        assert_eq!(table.rows[0][11], "—", "os has no guard");
        assert_eq!(table.rows[1][11], "25%", "mean of the runs' OS shares");
        assert!(summary_table(&summarise(&runs), "stream").rows.is_empty());

        // Modelled runs: no manager CPU column, an L/L* column.
        for run in &mut runs {
            run.manager_cpu_s = None;
            run.workload_cpu_s = None;
            run.model = Some(ModelRecord {
                makespan_ratio: Some(1.5),
                ..ModelRecord::default()
            });
        }
        let table = summary_table(&summarise(&runs), "aco");
        assert!(!table.headers.iter().any(|h| h == "manager CPU"));
        assert_eq!(table.headers.last().map(String::as_str), Some("L/L*"));
        assert_eq!(table.rows[0].last().map(String::as_str), Some("1.500"));
    }

    #[test]
    fn records_serialise_model_fields_flat() {
        let mut record = run("C.1", "os", 0, Some(1.0), None);
        record.model = Some(ModelRecord {
            periods: 7,
            ..ModelRecord::default()
        });
        let value = serde_json::to_value(&record).expect("serialises");
        assert_eq!(value["periods"], 7);
        assert_eq!(value["completion_s"], 1.0);
        assert!(value.get("model").is_none());
    }
}
