//! The vocabulary of pinlearn's experiments, one meaning for the real
//! machine (`pinlearn bench`) and the modelled one (`pinlearn sim`).
//!
//! ```text
//!   "C.2"                ─► Scenario      (scenario.rs): threads per core, and the
//!                                           other program's load over time (LoadSchedule)
//!   "learn:own@cpu"      ─► Scheduler     (scheduler.rs): who places the threads
//!   one run              ─► RunRecord     (record.rs)
//!   runs ─► summarise() ─► Summary ─► summary_table() ─► pinlearn_report::Table
//! ```
//!
//! bench turns a LoadSchedule into `pinlearn load` processes on real CPUs,
//! sim into background weight on modelled cores; both report RunRecords and
//! print the same table.

mod record;
mod scenario;
mod scheduler;

pub use record::{ModelRecord, RunRecord, Summary, summarise, summary_table};
pub use scenario::{Level, Load, LoadPhase, LoadSchedule, LoadSession, Scenario, ScenarioError, ScenarioListError};
pub use scheduler::{Scheduler, SchedulerError, SchedulerKind, interleaved};
