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
}
