//! The forms of a bench's results, one module per format (as hyperfine's
//! export module): what each writes, and nothing else.
//!
//! ```text
//!   BenchResults (results.rs: setup, calibration, best-static, runs, summary)
//!        │
//!        ├─► text.rs      tables for the terminal (stdout)
//!        ├─► markdown.rs  --markdown FILE: setup, one table per workload, best-static's picks
//!        ├─► json.rs      --json FILE: everything, as is
//!        └─► svg.rs       --plot PREFIX.svg: per workload the completion-time bars, per
//!                         scenario the speed lines (from the median run's trace)
//! ```

mod json;
mod markdown;
mod svg;
mod text;

pub use json::to_json;
pub use markdown::to_markdown;
pub use svg::write_plots;
pub use text::to_text;

use crate::BenchResults;
use pinlearn_experiment::Summary;

/// What the paired intervals are, for the reader: the order statistics of
/// the paired ratios closest to 95% that the repeats allow (min..max with
/// few repeats), and how surely they hold the median: the coverage of every
/// cell's interval, or their range. Empty when no cell has one.
fn interval_note(summary: &[Summary]) -> String {
    let mut levels: Vec<f64> = summary
        .iter()
        .filter_map(|s| s.paired_ci_level)
        .map(|level| (level * 1000.0).round() / 10.0)
        .collect();
    levels.sort_by(f64::total_cmp);
    levels.dedup();
    let coverage = match levels.as_slice() {
        [] => return String::new(),
        [one] => format!("{one}%"),
        [low, .., high] => format!("{low}-{high}%"),
    };
    format!(
        "[CI] is a distribution-free interval of the paired median (the order statistics nearest 95% \
         that the repeats allow; min..max with fewer than 9): it holds the median with {coverage} here"
    )
}

/// One line per best-static search: what it chose, or why it was skipped.
fn best_static_notes(results: &BenchResults, bullet: &str) -> String {
    let mut out = String::new();
    for record in &results.best_static {
        let what = match (&record.chosen, &record.skipped) {
            (Some(chosen), _) => format!("chose {chosen} out of {} tried", record.tried.len()),
            (None, Some(reason)) => format!("skipped: {reason}"),
            (None, None) => "nothing tried".to_string(),
        };
        out += &format!("{bullet}{} {}: best-static {what}\n", record.workload, record.scenario);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pinlearn_experiment::{RunRecord, summarise};

    /// `repeats` repeats of os and learn in one cell.
    fn cell(scenario: &str, repeats: usize) -> Vec<RunRecord> {
        (0..repeats)
            .flat_map(|repeat| {
                ["os", "learn"].map(|scheduler| RunRecord {
                    workload: "aco".into(),
                    scenario: scenario.into(),
                    scheduler: scheduler.into(),
                    repeat,
                    completion_s: Some(if scheduler == "os" {
                        2.0
                    } else {
                        2.0 + 0.01 * repeat as f64
                    }),
                    ..RunRecord::default()
                })
            })
            .collect()
    }

    #[test]
    fn the_interval_note_says_how_surely_the_repeats_hold_the_median() {
        // min..max of 5 pairs: 1 - 2/32; of 8: 1 - 2/256; 12 pairs give the
        // 3rd smallest to 3rd largest, 96.1%.
        assert!(interval_note(&summarise(&cell("C.2", 5))).ends_with("with 93.8% here"));
        assert!(interval_note(&summarise(&cell("C.2", 8))).ends_with("with 99.2% here"));
        assert!(interval_note(&summarise(&cell("C.2", 12))).ends_with("with 96.1% here"));
        let mut mixed = cell("C.2", 5);
        mixed.extend(cell("D", 8));
        assert!(interval_note(&summarise(&mixed)).ends_with("with 93.8-99.2% here"));
        // os alone has nothing paired: nothing to say.
        let os_only: Vec<RunRecord> = cell("C.2", 5).into_iter().filter(|r| r.scheduler == "os").collect();
        assert_eq!(interval_note(&summarise(&os_only)), "");
    }
}
