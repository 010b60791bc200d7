//! The seam between the engine and what it manages.
//!
//! ```text
//!            ┌──────────── Engine::step ────────────┐
//!  Target::observe ─► samples ─► Policy ─► Target::place (only on change)
//!            └──────────────────────────────────────┘
//!  LiveProcess: /proc + schedstat/perf/heartbeats + sched_setaffinity
//!  (a simulated machine implements the same trait)
//! ```

use crate::EngineError;
use pinlearn_policy::{ThreadKey, ThreadSample};
use pinlearn_topology::CpuSet;

/// Who a thread is, for traces and summaries.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ThreadInfo {
    /// Process id (0 in a simulation).
    pub pid: u32,
    /// Kernel thread id (the simulator's thread index).
    pub tid: u32,
    /// Thread name (`comm`), possibly empty.
    pub name: String,
    /// The supervised process that started its process (0: none, it is the
    /// root of the supervision, or not known).
    #[serde(skip_serializing_if = "is_zero")]
    pub ppid: u32,
}

/// `name` (a thread's or a bubble's, set by the supervised program) as it
/// may be printed on a terminal: control characters (a newline, an escape
/// sequence) are written escaped (`\n`, `\u{1b}`), so a program cannot
/// break a table or drive the terminal through its thread names. Traces
/// and JSON carry the name itself, quoted by their formats.
pub fn printable(name: &str) -> std::borrow::Cow<'_, str> {
    if name.chars().any(char::is_control) {
        name.chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect::<String>()
            .into()
    } else {
        name.into()
    }
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

/// What scored a thread in the last period.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Scoring {
    /// The metric its speed came from: `useful`, `cpu`, `heartbeat`,
    /// `instructions`, `io`.
    pub source: &'static str,
    /// The share of its recent CPU-clock samples in waiting code (sampled
    /// threads only).
    pub waiting_share: Option<f64>,
}

/// Below this share of its CPUs' time, a program "had fewer CPUs than it
/// may use" (slack for the manager, interrupts and measurement).
const FEWER_CPUS_SHARE: f64 = 0.9;

/// [`Target::queued`] from a period's totals over the program's threads:
/// seconds run, seconds runnable but queued, and the CPU-seconds its CPUs
/// could give. The queued share counts only when the threads ran less than
/// [`FEWER_CPUS_SHARE`] of `capacity_s` (queuing for CPUs the program fills
/// itself is not the OS's doing: 0); `None` when no thread was runnable.
pub fn queued_share(ran_s: f64, queued_s: f64, capacity_s: f64) -> Option<f64> {
    let runnable = ran_s + queued_s;
    if !(runnable > 0.0 && runnable.is_finite()) {
        return None;
    }
    let fewer = ran_s < FEWER_CPUS_SHARE * capacity_s;
    Some(if fewer { queued_s / runnable } else { 0.0 })
}

/// Something whose threads the engine can measure and place.
pub trait Target {
    /// Fills `samples` with every live thread, sorted by key, and the speed it
    /// showed since the previous call (`None` for a thread seen first now or
    /// one that did not run). Threads absent from the list have ended.
    fn observe(&mut self, samples: &mut Vec<ThreadSample>) -> Result<(), EngineError>;

    /// Restricts thread `key` to `cpus` (the CPUs of layout place `place`)
    /// from now on. `Ok(false)` if the thread has meanwhile ended.
    fn place(&mut self, key: ThreadKey, place: usize, cpus: &CpuSet) -> Result<bool, EngineError>;

    /// The place a newly seen thread already occupies, if its affinity equals
    /// one of the places (so no syscall is needed to keep it there).
    fn initial_place(&self, key: ThreadKey) -> Option<usize>;

    /// Who the thread is.
    fn info(&self, key: ThreadKey) -> ThreadInfo;

    /// The application's total progress rate over the period the last
    /// `observe` measured, in a unit fixed for the run (see
    /// [`pinlearn_policy::PeriodInput::progress`]); `None`: the policy uses
    /// the sum of the threads' speeds.
    fn progress(&self) -> Option<f64> {
        None
    }

    /// The share of the threads' CPU time spent in waiting code over the
    /// period the last `observe` measured, when the target can tell.
    fn waiting(&self) -> Option<f64> {
        None
    }

    /// The threads' placement changes hands from the coming period on (a
    /// guard switched between Linux and the learner): measures that average
    /// over periods start again from there, so that a window is scored on
    /// what its own periods showed, not on what the placement before left
    /// in an average.
    fn measure_afresh(&mut self) {}

    /// The share of the threads' runnable time queued for a CPU over the
    /// period the last `observe` measured, while the program had fewer CPUs
    /// than it may use (0 when it had them all); `None` when the target
    /// cannot tell.
    fn queued(&self) -> Option<f64> {
        None
    }

    /// The share of the program's CPUs' time other programs ran on them
    /// over the last period observed (or the last second, for a target that
    /// counts it coarsely); `None` where the target cannot tell.
    fn others_share(&self) -> Option<f64> {
        None
    }

    /// The share of the threads' memory on other NUMA nodes than the ones
    /// they ran on over the last period observed, weighted by run time
    /// (see [`pinlearn_policy::PeriodInput::remote`]); `None` where the
    /// target cannot tell.
    fn remote(&self) -> Option<f64> {
        None
    }

    /// Indexed by CPU number: the share of each of the program's CPUs'
    /// time that other programs ran on it, over the same span as
    /// [`Target::others_share`]; `None` for a CPU the target does not watch,
    /// and `None` altogether where it cannot tell.
    fn others_by_cpu(&self) -> Option<&[Option<f64>]> {
        None
    }

    /// Linux's scheduler slice where the other programs run in scheduling
    /// groups apart from the target's, as last found (see
    /// [`pinlearn_policy::PeriodInput::wake_slice_s`]); `None` where they
    /// share its group or the target cannot tell.
    fn wake_slice(&self) -> Option<f64> {
        None
    }

    /// What scored thread `key` in the last period, if the target says.
    fn scoring(&self, key: ThreadKey) -> Option<Scoring> {
        let _ = key;
        None
    }

    /// The CPU thread `key` ran on last, read now; `None` when the target
    /// cannot tell. The engine asks only when the policy wants to know
    /// ([`pinlearn_policy::Policy::wants_cores`]).
    fn last_cpu(&mut self, key: ThreadKey) -> Option<usize> {
        let _ = key;
        None
    }

    /// Moves the memory of process `pid` to layout node `node` (memory
    /// binding). `Ok(false)` when there is nothing to do (the process ended,
    /// or the target has no memory placement).
    fn bind_memory(&mut self, pid: u32, node: usize) -> Result<bool, EngineError> {
        let _ = (pid, node);
        Ok(false)
    }

    /// Moves the memory thread `key` touched first to layout node `node`
    /// (its memory follows it there). `Ok(false)` when nothing moved: the
    /// thread ended, its memory is there already, or the target cannot
    /// tell a thread's memory.
    fn move_thread_memory(&mut self, key: ThreadKey, node: usize) -> Result<bool, EngineError> {
        let _ = (key, node);
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::{printable, queued_share};

    #[test]
    fn names_print_with_their_control_characters_escaped_and_nothing_else_changed() {
        assert_eq!(printable("worker-3"), "worker-3");
        assert_eq!(printable("wörker ✓"), "wörker ✓");
        assert_eq!(printable("a\nb"), "a\\nb");
        assert_eq!(printable("\u{1b}[2Jx\t"), "\\u{1b}[2Jx\\t");
        assert!(!printable("\r\n\u{7f}\u{9b}").chars().any(char::is_control));
    }

    #[test]
    fn queuing_counts_only_when_the_program_had_fewer_cpus_than_it_may_use() {
        // Two CPUs over 1 s. Four threads that ran 1.5 CPU-seconds and
        // queued 2.5 s: others had part of the CPUs.
        assert_eq!(queued_share(1.5, 2.5, 2.0), Some(2.5 / 4.0));
        // The same queuing with both CPUs the program's own: not counted.
        assert_eq!(queued_share(1.95, 2.05, 2.0), Some(0.0));
        // A lone serial thread: ran little, never queued.
        assert_eq!(queued_share(0.5, 0.0, 2.0), Some(0.0));
        // Nothing runnable, or nonsense: nothing to say.
        assert_eq!(queued_share(0.0, 0.0, 2.0), None);
        assert_eq!(queued_share(f64::NAN, 1.0, 2.0), None);
    }
}
