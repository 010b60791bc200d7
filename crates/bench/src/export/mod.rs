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
