//! The manager's own scheduling priority: its periods must come on time
//! even where the machine is crowded, or it measures and decides late.
//!
//! ```text
//!   drive() starts ─► ManagerScheduling::start(Realtime)
//!        │  the calling thread to SCHED_FIFO 1, with SCHED_RESET_ON_FORK
//!        │  (what it starts, the watchdog, never inherits it)
//!        │  refused (no root, no CAP_SYS_NICE, RLIMIT_RTPRIO 0, a cgroup
//!        │  without real-time time) ─► stays as it was; the reason is kept
//!        │  and said only if periods then run late
//!        ▼
//!   every step ─► step_took(): a manager whose steps take more CPU time
//!        │         than half of the periods (moving average) goes back to the
//!        │         priority it had, with one note: real-time priority is for
//!        │         short steps on time, never for taking a CPU from the program.
//!        │         One step counts as at most a whole period, so one long
//!        │         step (admitting hundreds of processes at once) never
//!        │         decides it alone
//!        ▼
//!   drive() ends (Drop) ─► back to the priority it had
//! ```
//!
//! Why: under fair scheduling a thread that wakes every period waits for
//! its turn among every runnable thread of its CPU. Measured on a 2-CPU
//! machine (2026-11-26), a program of 256 busy threads left pinlearn 10 of
//! the 120 periods of 50 ms it asked for in 6 s, and 2000 threads one
//! period in 3 s; at SCHED_FIFO 1 it took all of them, its steps taking
//! 11% of the periods with 2000 threads (at most 23% in a moving average
//! over 16 periods, while the threads started; docs/reliability.md).
//! nix has no `sched_setscheduler`: libc directly.

use crate::config::ManagerPriority;
use std::time::Duration;

/// Above this moving-average share of the periods spent in steps, the
/// manager gives up real-time priority.
const MOST_STEP_SHARE: f64 = 0.5;
/// Weight of the newest step in that moving average.
const STEP_SHARE_WEIGHT: f64 = 1.0 / 16.0;

/// The scheduling policy and priority of a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Scheduling {
    policy: libc::c_int,
    priority: libc::c_int,
}

impl Scheduling {
    /// The calling thread's.
    fn current() -> std::io::Result<Self> {
        // SAFETY: 0 names the calling thread.
        let policy = unsafe { libc::sched_getscheduler(0) };
        if policy < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: 0 names the calling thread; `param` is ours to write.
        let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
        if unsafe { libc::sched_getparam(0, &mut param) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Scheduling {
            policy: policy & !libc::SCHED_RESET_ON_FORK,
            priority: param.sched_priority,
        })
    }

    /// Makes it the calling thread's.
    fn apply(self) -> std::io::Result<()> {
        let param = libc::sched_param {
            sched_priority: self.priority,
        };
        // SAFETY: 0 names the calling thread; `param` lives for the call.
        let set = unsafe { libc::sched_setscheduler(0, self.policy, &param) };
        if set == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    fn real_time(self) -> bool {
        matches!(self.policy, libc::SCHED_FIFO | libc::SCHED_RR)
    }
}

/// The manager thread's priority over one supervision.
#[derive(Debug)]
pub struct ManagerScheduling {
    /// What to go back to, while raised.
    raised_from: Option<Scheduling>,
    /// Why real-time priority was not had, if asked for.
    refused: Option<String>,
    /// Moving average of step time over period.
    step_share: f64,
}

impl ManagerScheduling {
    /// Raises the calling thread as `asked` (a thread that already has a
    /// real-time policy keeps it).
    pub fn start(asked: ManagerPriority) -> Self {
        let mut scheduling = ManagerScheduling {
            raised_from: None,
            refused: None,
            step_share: 0.0,
        };
        if asked == ManagerPriority::Normal {
            return scheduling;
        }
        let raised = Scheduling {
            policy: libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK,
            priority: 1,
        };
        match Scheduling::current() {
            Ok(now) if now.real_time() => {}
            Ok(now) => match raised.apply() {
                Ok(()) => scheduling.raised_from = Some(now),
                Err(e) => scheduling.refused = Some(e.to_string()),
            },
            Err(e) => scheduling.refused = Some(e.to_string()),
        }
        scheduling
    }

    /// Whether the manager runs at real-time priority now.
    pub fn raised(&self) -> bool {
        self.raised_from.is_some()
    }

    /// Why real-time priority was asked for and not had.
    pub fn refused(&self) -> Option<&str> {
        self.refused.as_deref()
    }

    /// After each step: the CPU time it took (not its wall time: a read of
    /// a starting process's /proc files can wait in the kernel, which takes
    /// no CPU from anyone). Returns a note when the manager gave up
    /// real-time priority because of it.
    pub fn step_took(&mut self, took: Duration, interval: Duration) -> Option<String> {
        // At most one period's worth: 600 processes admitted in one step
        // took 0.3-0.6 s of CPU time (2026-11-26), which unclamped gave up
        // the priority after that step alone.
        let share = (took.as_secs_f64() / interval.as_secs_f64().max(1e-9)).min(1.0);
        self.step_share += STEP_SHARE_WEIGHT * (share - self.step_share);
        if self.step_share <= MOST_STEP_SHARE {
            return None;
        }
        let from = self.raised_from.take()?;
        let back = from.apply().err();
        Some(format!(
            "pinlearn's steps took {:.0}% of a CPU (periods of {} ms): it gave up real-time priority to leave the CPUs to the program{}",
            100.0 * self.step_share,
            interval.as_secs_f64() * 1e3,
            back.map_or(String::new(), |e| format!(" (and could not: {e})"))
        ))
    }
}

impl Drop for ManagerScheduling {
    fn drop(&mut self) {
        if let Some(from) = self.raised_from.take() {
            let _ = from.apply();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running_on_its_own_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        // The test harness's threads are left as they were.
        std::thread::spawn(f).join().unwrap()
    }

    #[test]
    fn normal_priority_changes_nothing() {
        let (before, after) = running_on_its_own_thread(|| {
            let before = Scheduling::current().unwrap();
            let scheduling = ManagerScheduling::start(ManagerPriority::Normal);
            assert!(!scheduling.raised() && scheduling.refused().is_none());
            (before, Scheduling::current().unwrap())
        });
        assert_eq!(before, after);
    }

    #[test]
    fn realtime_is_had_or_its_refusal_kept_and_the_old_priority_comes_back() {
        let (during, after, before) = running_on_its_own_thread(|| {
            let before = Scheduling::current().unwrap();
            let scheduling = ManagerScheduling::start(ManagerPriority::Realtime);
            let during = Scheduling::current().unwrap();
            assert!(scheduling.raised() != scheduling.refused().is_some(), "{scheduling:?}");
            let raised = scheduling.raised();
            drop(scheduling);
            (raised.then_some(during), Scheduling::current().unwrap(), before)
        });
        if let Some(during) = during {
            assert_eq!(during.policy, libc::SCHED_FIFO);
            assert_eq!(during.priority, 1);
        }
        assert_eq!(after, before);
    }

    #[test]
    fn steps_that_take_most_of_the_periods_give_real_time_priority_up_once() {
        running_on_its_own_thread(|| {
            let mut scheduling = ManagerScheduling::start(ManagerPriority::Realtime);
            if !scheduling.raised() {
                eprintln!("skipped: real-time priority refused here ({:?})", scheduling.refused());
                return;
            }
            let period = Duration::from_millis(50);
            // One very long step first (admitting 600 processes: 12
            // periods' worth), then short steps, and one long one (a burst of
            // new threads): it keeps the priority.
            assert_eq!(scheduling.step_took(Duration::from_millis(600), period), None);
            for _ in 0..100 {
                assert_eq!(scheduling.step_took(Duration::from_millis(2), period), None);
            }
            assert_eq!(scheduling.step_took(Duration::from_millis(100), period), None);
            assert!(scheduling.raised());
            // Steps that keep taking most of the period give it up, once.
            let notes: Vec<String> = (0..30)
                .filter_map(|_| scheduling.step_took(Duration::from_millis(40), period))
                .collect();
            assert_eq!(notes.len(), 1, "{notes:?}");
            assert!(notes[0].contains("gave up real-time priority"), "{notes:?}");
            assert!(!scheduling.raised());
            assert!(!Scheduling::current().unwrap().real_time());
        });
    }
}
