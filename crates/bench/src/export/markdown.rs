//! `--markdown FILE`: the report to keep beside the results (docs/results.md
//! is made of these): setup, one table per workload, best-static's picks.

use crate::BenchResults;
use pinlearn_experiment::summary_table;

/// The Markdown report: setup, one table per workload, best-static's picks.
pub fn to_markdown(results: &BenchResults) -> String {
    let s = &results.setup;
    let mut out = String::from("# pinlearn bench results\n\n");
    out += &format!("- date: {}\n- command: `{}`\n", s.date, s.command);
    out += &format!(
        "- CPUs {} ({} cores, per node {:?}; {}, last-level caches {}); background load: {}, {} session; autogroup {}\n",
        s.cpus,
        s.cores,
        s.cores_per_node,
        s.cpu_model.as_deref().unwrap_or("CPU model unknown"),
        s.last_level_cache_mib
            .map_or("unknown".to_string(), |mib| format!("{mib} MiB")),
        s.load_generator,
        s.load_session,
        s.autogroup.as_deref().unwrap_or("unknown")
    );
    out += &format!(
        "- {} interleaved repeats per scheduler; times are the workload's own completion time in seconds; \
         \"vs os\" compares medians (negative: faster than Linux alone); \"paired vs os\" is the median \
         over the repeats of the time divided by the os run of the same repeat; \"manager CPU\" is the \
         manager's CPU time as a share of the workload's; \"OS-placed\" is the share of the periods the \
         learner's do-no-harm guard left to Linux\n",
        s.repeat
    );
    let note = super::interval_note(&results.summary);
    if !note.is_empty() {
        out += &format!("- {note}\n");
    }
    for (name, command) in &s.workloads {
        out += &format!("\n## {name}\n\n`{command}`\n\n");
        out += &summary_table(&results.summary, name).to_markdown();
    }
    let notes = super::best_static_notes(results, "- ");
    if !notes.is_empty() {
        out += "\n## best-static\n\n";
        out += &notes;
    }
    out
}
