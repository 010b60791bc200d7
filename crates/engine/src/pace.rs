//! The manager's period under its CPU budget: with thousands of threads on
//! a few CPUs, measuring every thread each period costs the program more
//! than any placement can win back, so the period stretches.
//!
//! ```text
//!   drive(): every step after the first ─► Pace::step_took(CPU time of the step)
//!        │ moving average of the steps' CPU time (time constant 1 s)
//!        ▼
//!   period = average / (manager_budget × allowed CPUs), within
//!            [interval, MAX_STRETCH × interval]   ─► the next deadline
//!        │ stretched by more than half for 5 s in a row: one note
//! ```
//!
//! Measured on a 2-CPU machine (2026-11-26): a step costs about 3.5 µs of
//! CPU time per thread (schedstat read, task listing, sampler), so 4096
//! threads under `--policy os` took 28% of one CPU in 50 ms periods and
//! the program ran 11.6% slower than alone (29.3 s against 26.2 s). With
//! tens of threads the steps stay far below the budget and nothing
//! changes. The first step, which admits every thread already running, is
//! not counted. Pure: the caller measures the CPU time.

use std::time::Duration;

/// The longest period, in base periods.
pub const MAX_STRETCH: u32 = 20;
/// Time constant of the moving average, in seconds: a step weighs
/// 1 - exp(-period / TAU), so a burst of new threads (each admitted once)
/// is forgotten within a few seconds whatever the period.
const TAU_S: f64 = 1.0;
/// Periods this much longer than the base one, for this many seconds in a
/// row, are worth a note (not the burst of a program starting its threads:
/// the average forgets it within about 2 s).
const NOTE_AT: f64 = 1.5;
const NOTE_AFTER_S: f64 = 5.0;

/// The period the manager keeps, from the CPU time its steps take.
#[derive(Clone, Debug)]
pub struct Pace {
    base: Duration,
    /// The share of the CPUs' time the steps may take, and how many CPUs.
    share: f64,
    cpus: usize,
    average_s: Option<f64>,
    now: Duration,
    longest: Duration,
    /// Seconds of periods in a row stretched by more than NOTE_AT.
    stretched_s: f64,
    noted: bool,
}

impl Pace {
    /// Periods of `base`, stretched where the steps take more than `share`
    /// of the time of `cpus` CPUs.
    pub fn new(base: Duration, share: f64, cpus: usize) -> Self {
        Pace {
            base,
            share,
            cpus: cpus.max(1),
            average_s: None,
            now: base,
            longest: base,
            stretched_s: 0.0,
            noted: false,
        }
    }

    /// The period until the next step.
    pub fn interval(&self) -> Duration {
        self.now
    }

    /// The longest period kept so far.
    pub fn longest(&self) -> Duration {
        self.longest
    }

    /// After a step (not the first) that took `cpu` of CPU time, with
    /// `threads` threads supervised: sets the next period, and returns a
    /// note the first time it stayed stretched by more than half for
    /// [`NOTE_AFTER_S`] seconds.
    pub fn step_took(&mut self, cpu: Duration, threads: usize) -> Option<String> {
        let took = cpu.as_secs_f64();
        let weight = 1.0 - (-self.now.as_secs_f64() / TAU_S).exp();
        let average = match self.average_s {
            Some(average) => average + weight * (took - average),
            None => took,
        };
        self.average_s = Some(average);
        let base = self.base.as_secs_f64();
        let budget = self.share * self.cpus as f64;
        let wanted = (average / budget.max(1e-9)).clamp(base, base * f64::from(MAX_STRETCH));
        self.now = Duration::from_secs_f64(wanted);
        self.longest = self.longest.max(self.now);
        self.stretched_s = if wanted < base * NOTE_AT {
            0.0
        } else {
            self.stretched_s + wanted
        };
        if self.noted || self.stretched_s < NOTE_AFTER_S {
            return None;
        }
        self.noted = true;
        Some(format!(
            "pinlearn's steps take {:.1} ms of CPU time with {threads} threads: its periods are stretched to {:.0} ms (at most {:.0} ms) so that they take at most {}% of the {} CPUs' time (manager_budget)",
            average * 1e3,
            wanted * 1e3,
            base * f64::from(MAX_STRETCH) * 1e3,
            self.share * 100.0,
            self.cpus,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn cheap_steps_keep_the_period() {
        // 64 threads: about 0.25 ms a step, 0.5% of one of 2 CPUs.
        let mut pace = Pace::new(50 * MS, 0.01, 2);
        for _ in 0..100 {
            assert_eq!(pace.step_took(MS / 4, 64), None);
        }
        assert_eq!(pace.interval(), 50 * MS);
        assert_eq!(pace.longest(), 50 * MS);
    }

    #[test]
    fn costly_steps_stretch_the_period_to_the_budget_once_noted_and_it_comes_back() {
        // 4096 threads on 2 CPUs: 14 ms a step; 1% of 2 CPUs is 0.02 s/s.
        let mut pace = Pace::new(50 * MS, 0.01, 2);
        let notes: Vec<String> = (0..50).filter_map(|_| pace.step_took(14 * MS, 4096)).collect();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("4096 threads") && notes[0].contains("1% of the 2 CPUs"),
            "{notes:?}"
        );
        let stretched = pace.interval().as_secs_f64();
        assert!((stretched - 0.7).abs() < 0.01, "{stretched}");
        // At most MAX_STRETCH base periods.
        for _ in 0..50 {
            pace.step_took(200 * MS, 4096);
        }
        assert_eq!(pace.interval(), 50 * MS * MAX_STRETCH);
        // The threads end: the period comes back to the base.
        for _ in 0..100 {
            pace.step_took(MS / 4, 10);
        }
        assert_eq!(pace.interval(), 50 * MS);
        assert_eq!(pace.longest(), 50 * MS * MAX_STRETCH);
    }

    #[test]
    fn a_burst_of_new_threads_stretches_a_few_periods_without_a_note() {
        let mut pace = Pace::new(50 * MS, 0.01, 2);
        assert_eq!(pace.step_took(11 * MS, 257), None, "256 threads admitted");
        assert!(pace.interval() > 400 * MS);
        let notes: Vec<String> = (0..100).filter_map(|_| pace.step_took(MS / 2, 257)).collect();
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(pace.interval(), 50 * MS);
    }

    #[test]
    fn many_cpus_give_the_manager_more_room() {
        // The same steps on 256 CPUs: 1% of them is 2.56 s/s, never reached.
        let mut pace = Pace::new(50 * MS, 0.01, 256);
        for _ in 0..50 {
            assert_eq!(pace.step_took(14 * MS, 4096), None);
        }
        assert_eq!(pace.interval(), 50 * MS);
    }
}
