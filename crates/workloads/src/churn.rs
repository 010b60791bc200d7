//! Thread churn: a program that starts a short-lived thread for every task
//! instead of keeping a pool (task-per-thread servers, naive OpenMP nesting),
//! the stress case for a manager that tracks threads.
//!
//! ```text
//!   thread "churn-t" (t = 0..threads), until --duration is over:
//!     every 1 / (rate / threads) s:  spawn "task" ─► spins --work, sleeps --linger ─► ends
//!     join the tasks that have ended (so about rate x work tasks live at any time)
//!   Report { tasks (threads started and joined), rate achieved, ... }
//! ```
//!
//! # Options
//!
//! `--rate N` threads started per second over all spawners (default 1000),
//! `--duration DUR` (default 10s), `--work DUR` each task spins (default
//! 100us), `--linger DUR` each task then sleeps (default 0: with a linger,
//! about rate x linger tasks are alive at any time without using the CPUs). The result is checked: every task must have run its work once
//! (the sum of their unit counts equals the number started).

use crate::common::{Common, WorkError};
use serde::Serialize;
use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Joins a finished task; a task that panicked is a wrong result.
fn join(task: Option<JoinHandle<()>>) -> Result<(), WorkError> {
    match task.map(JoinHandle::join) {
        Some(Err(_)) => Err(WorkError::WrongResult("a task thread panicked".into())),
        _ => Ok(()),
    }
}

/// Options of the churn workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Threads started per second, over all spawners
    pub rate: f64,
    /// How long to keep starting threads
    pub duration: Duration,
    /// How long each short-lived thread spins
    pub work: Duration,
    /// How long each short-lived thread then sleeps before it ends
    pub linger: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rate: 1000.0,
            duration: Duration::from_secs(10),
            work: Duration::from_micros(100),
            linger: Duration::ZERO,
        }
    }
}

/// What a churn run did.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Short-lived threads started and joined.
    pub tasks: u64,
    /// Threads started per second, achieved.
    pub rate: f64,
    pub target_rate: f64,
}

pub fn run(opts: &Options, common: &Common) -> Result<Report, WorkError> {
    if !(opts.rate.is_finite() && opts.rate > 0.0) {
        return Err(WorkError::BadInput(format!(
            "--rate must be above 0, not {}",
            opts.rate
        )));
    }
    let per_spawner = opts.rate / common.threads as f64;
    let gap = Duration::from_secs_f64(1.0 / per_spawner);
    let done_units = Arc::new(AtomicU64::new(0));
    common.start("churn", 0);
    let started = Instant::now();
    let per_thread: Vec<Result<u64, WorkError>> = common.spawn_workers("churn", |_| {
        let mut tasks = 0u64;
        let mut running: VecDeque<JoinHandle<()>> = VecDeque::new();
        let mut next = Instant::now();
        while started.elapsed() < opts.duration {
            let (work, linger) = (opts.work, opts.linger);
            let units = done_units.clone();
            let task = std::thread::Builder::new().name("task".into()).spawn(move || {
                let spin = Instant::now();
                let mut x = 1u64;
                while spin.elapsed() < work {
                    x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
                units.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(linger);
            });
            running.push_back(task?);
            tasks += 1;
            common.work_done(1);
            while running.front().is_some_and(JoinHandle::is_finished) {
                join(running.pop_front())?;
            }
            next += gap;
            let now = Instant::now();
            if next > now {
                std::thread::sleep(next - now);
            } else {
                next = now; // behind: do not burst to catch up
            }
        }
        while let Some(task) = running.pop_front() {
            join(Some(task))?;
        }
        Ok(tasks)
    })?;
    common.finish();
    let wall = started.elapsed().as_secs_f64();
    let tasks = per_thread.into_iter().sum::<Result<u64, WorkError>>()?;
    let ran = done_units.load(Ordering::Relaxed);
    if ran != tasks {
        return Err(WorkError::WrongResult(format!(
            "{tasks} tasks started but {ran} ran their work"
        )));
    }
    Ok(Report {
        tasks,
        rate: tasks as f64 / wall,
        target_rate: opts.rate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_about_the_asked_rate_and_every_task_runs() {
        let common = Common::new(2, 1, true).unwrap();
        let opts = Options {
            rate: 400.0,
            duration: Duration::from_millis(500),
            work: Duration::from_micros(10),
            linger: Duration::from_millis(5),
        };
        let report = run(&opts, &common).unwrap();
        assert!(report.tasks >= 100 && report.tasks <= 220, "{report:?}");
        let bad = Options { rate: 0.0, ..opts };
        assert!(matches!(run(&bad, &common), Err(WorkError::BadInput(_))));
    }
}
