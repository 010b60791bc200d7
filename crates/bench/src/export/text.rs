//! The terminal's form: one summary table per workload, then best-static's picks.

use crate::BenchResults;
use pinlearn_experiment::summary_table;

/// Tables for a terminal: one per workload, then best-static's picks.
pub fn to_text(results: &BenchResults) -> String {
    let mut out = String::new();
    for (name, command) in &results.setup.workloads {
        out += &format!("\n{name}: {command}\n");
        out += &summary_table(&results.summary, name).to_text();
    }
    out += &super::best_static_notes(results, "  ");
    out
}
