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
    let note = super::interval_note(&results.summary);
    if !note.is_empty() {
        out += &format!("\n{note}\n");
    }
    out += &super::best_static_notes(results, "  ");
    out
}
