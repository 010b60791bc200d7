//! Results out: the papers' table on stdout, the JSON records, and the
//! running-average speed plot.
//!
//! ```text
//!   RunRecord[] ──summarise──► SummaryRow per (scenario, scheduler):
//!                                mean completion over seeds, deviation,
//!                                difference to `os` in % (positive = faster than the OS,
//!                                as the papers' Diff.), mean speed, makespan / optimum
//!               ──table──────► aligned text
//!               ──JsonReport─► {"model": ..., "runs": [records]}   (--json)
//!   series per scheduler ──plot──► SVG line chart (--plot, pinlearn-report)
//! ```

use std::path::Path;

use serde::Serialize;

use crate::experiment::RunRecord;

/// One line of the printed table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SummaryRow {
    pub scenario: String,
    pub scheduler: String,
    pub runs: usize,
    pub finished: usize,
    /// Mean completion over the finished runs.
    pub completion_s: Option<f64>,
    /// Sample standard deviation of the completion (0 for one run).
    pub deviation_s: Option<f64>,
    /// (os − this) / os × 100 on the mean completions.
    pub vs_os_percent: Option<f64>,
    pub mean_speed: Option<f64>,
    pub makespan_ratio: Option<f64>,
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Groups records by (scenario, scheduler), in the order they first appear.
pub fn summarise(records: &[RunRecord]) -> Vec<SummaryRow> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in records {
        let key = (r.scenario.clone(), r.scheduler.clone());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let mut rows: Vec<SummaryRow> = keys
        .into_iter()
        .map(|(scenario, scheduler)| {
            let runs: Vec<&RunRecord> = records
                .iter()
                .filter(|r| r.scenario == scenario && r.scheduler == scheduler)
                .collect();
            let completions: Vec<f64> = runs.iter().filter_map(|r| r.completion_s).collect();
            let completion = mean(&completions);
            let deviation = completion.map(|m| {
                if completions.len() < 2 {
                    0.0
                } else {
                    let ss: f64 = completions.iter().map(|c| (c - m) * (c - m)).sum();
                    (ss / (completions.len() - 1) as f64).sqrt()
                }
            });
            let speeds: Vec<f64> = runs.iter().filter_map(|r| r.mean_speed).collect();
            let ratios: Vec<f64> = runs.iter().filter_map(|r| r.makespan_ratio).collect();
            SummaryRow {
                finished: completions.len(),
                runs: runs.len(),
                scenario,
                scheduler,
                // Only a scheduler whose runs all finished gets a mean.
                completion_s: if completions.len() == runs.len() {
                    completion
                } else {
                    None
                },
                deviation_s: if completions.len() == runs.len() {
                    deviation
                } else {
                    None
                },
                vs_os_percent: None,
                mean_speed: mean(&speeds),
                makespan_ratio: mean(&ratios),
            }
        })
        .collect();
    let os: Vec<(String, Option<f64>)> = rows
        .iter()
        .filter(|r| r.scheduler == "os")
        .map(|r| (r.scenario.clone(), r.completion_s))
        .collect();
    for row in &mut rows {
        let baseline = os.iter().find(|(s, _)| *s == row.scenario).and_then(|(_, c)| *c);
        row.vs_os_percent = match (baseline, row.completion_s) {
            (Some(os), Some(this)) if os > 0.0 && row.scheduler != "os" => Some((os - this) / os * 100.0),
            _ => None,
        };
    }
    rows
}

/// The table printed on stdout.
pub fn table(rows: &[SummaryRow], metric: &str) -> String {
    let dash = || "-".to_string();
    let mut text = format!(
        "{:<8} {:<20} {:>4} {:>13} {:>9} {:>8} {:>11} {:>6}\n",
        "scenario", "scheduler", "runs", "completion_s", "dev_s", "vs_os_%", "speed", "L/L*"
    );
    for row in rows {
        let completion = match row.completion_s {
            Some(c) => format!("{c:.2}"),
            None => format!("{}/{} done", row.finished, row.runs),
        };
        text.push_str(&format!(
            "{:<8} {:<20} {:>4} {:>13} {:>9} {:>8} {:>11} {:>6}\n",
            row.scenario,
            row.scheduler,
            row.runs,
            completion,
            row.deviation_s.map_or_else(dash, |d| format!("{d:.2}")),
            row.vs_os_percent.map_or_else(dash, |d| format!("{d:+.2}")),
            row.mean_speed.map_or_else(dash, |s| format!("{s:.4}")),
            row.makespan_ratio.map_or_else(dash, |r| format!("{r:.3}")),
        ));
    }
    text.push_str(&format!(
        "completion_s: mean simulated completion over seeds; vs_os_%: (os - scheduler) / os, positive = faster than the OS; \
         speed: mean {metric} speed; L/L*: load-model makespan of the final assignment over the optimum\n"
    ));
    text
}

/// Draws the running-average speed of every scheduler over simulated time.
pub fn plot(path: &Path, title: &str, y_label: &str, lines: &[(String, Vec<(f64, f64)>)]) -> Result<(), String> {
    let axes = pinlearn_report::Axes {
        x: "simulated time (s)",
        y: y_label,
    };
    pinlearn_report::speed_plot(path, title, axes, lines).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(scenario: &str, scheduler: &str, seed: u64, completion: Option<f64>) -> RunRecord {
        RunRecord {
            scenario: scenario.into(),
            scheduler: scheduler.into(),
            seed,
            workload: "independent".into(),
            threads: 4,
            cores: 2,
            finished: completion.is_some(),
            completion_s: completion,
            mean_speed: Some(0.5),
            mean_progress: 0.5,
            makespan: None,
            optimal_makespan: None,
            makespan_ratio: None,
            nash: None,
            first_nash_period: None,
            nash_share: None,
            periods: 10,
            repins: 0,
            migrations: 0,
            node_migrations: 0,
            balancer_moves: 0,
        }
    }

    #[test]
    fn summary_compares_with_the_os_like_the_papers() {
        let records = vec![
            record("A.1", "os", 1, Some(100.0)),
            record("A.1", "os", 2, Some(110.0)),
            record("A.1", "learn", 1, Some(90.0)),
            record("A.1", "learn", 2, Some(100.0)),
            record("A.1", "static", 1, None),
            record("A.1", "static", 2, Some(120.0)),
        ];
        let rows = summarise(&records);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].completion_s, Some(105.0));
        assert!((rows[0].deviation_s.unwrap() - 50f64.sqrt()).abs() < 1e-12);
        assert_eq!(rows[0].vs_os_percent, None);
        assert!((rows[1].vs_os_percent.unwrap() - 10.0 / 105.0 * 100.0).abs() < 1e-9);
        assert_eq!(rows[2].completion_s, None, "an unfinished run leaves no mean");
        assert_eq!(rows[2].finished, 1);
        let text = table(&rows, "cpu");
        assert!(text.contains("1/2 done"), "{text}");
        assert!(text.contains("+9.52"), "{text}");
    }

    #[test]
    fn plot_writes_an_svg_with_every_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("speed.svg");
        let lines = vec![
            ("os".to_string(), (0..5000).map(|k| (k as f64 * 0.05, 0.5)).collect()),
            ("learn:mean".to_string(), vec![(0.0, 0.2), (10.0, 0.8)]),
        ];
        plot(&path, "B.2", "speed", &lines).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
        assert!(svg.contains("learn:mean") && svg.contains("simulated time"));
        assert!(svg.matches("<polyline").count() >= 2, "one line per scheduler");
    }
}
