//! The background load of a simulated run: weight per core over time,
//! piecewise constant, made from a scenario's load schedule (which cores
//! carry the other program when; pinlearn-experiment decides that for the
//! real machine and the simulator alike).
//!
//! ```text
//!   Scenario::load_schedule ─► LoadSchedule [(from s, loaded cores)]
//!        │ BackgroundSchedule::from_load(schedule, cores, weight, session)
//!        ▼
//!   BackgroundSchedule [(from s, weight of every core)] ─► SimMachine, LoadGame (averaged)
//! ```

use pinlearn_experiment::{LoadSchedule, LoadSession};

/// Background load per core over time: piecewise constant.
#[derive(Clone, Debug, PartialEq)]
pub struct BackgroundSchedule {
    /// (start in seconds, weight per core), sorted by start, the first at 0.
    phases: Vec<(f64, Vec<f64>)>,
}

impl BackgroundSchedule {
    /// The background of every phase of `schedule`, over `cores` cores: in
    /// the program's session, `weight` on every loaded core (one entity per
    /// core of the other program's threads); in a session of its own, the
    /// session's group weight `weight` split evenly over the cores it loads
    /// (Linux gives a task group one weight, shared among its CPUs).
    pub fn from_load(schedule: &LoadSchedule, cores: usize, weight: f64, session: LoadSession) -> Self {
        let phases = schedule
            .phases()
            .iter()
            .map(|phase| {
                let mut weights = vec![0.0; cores];
                let per_core = match session {
                    LoadSession::Same => weight,
                    LoadSession::Own => weight / phase.cores.len().max(1) as f64,
                };
                for &core in &phase.cores {
                    if let Some(w) = weights.get_mut(core) {
                        *w = per_core;
                    }
                }
                (phase.start_s, weights)
            })
            .collect();
        BackgroundSchedule { phases }
    }

    /// A schedule from explicit phases (sorted by start; the first should
    /// start at 0, earlier times have no load).
    pub fn new(phases: Vec<(f64, Vec<f64>)>) -> Self {
        BackgroundSchedule { phases }
    }

    /// No load on `cores` cores.
    pub fn idle(cores: usize) -> Self {
        BackgroundSchedule {
            phases: vec![(0.0, vec![0.0; cores])],
        }
    }

    pub fn phases(&self) -> &[(f64, Vec<f64>)] {
        &self.phases
    }

    /// Index of the phase in force at `time_s` (`None` before the first).
    pub fn phase_at(&self, time_s: f64) -> Option<usize> {
        self.phases.iter().rposition(|(start, _)| *start <= time_s)
    }

    /// The time-averaged weight per core over `[0, until_s]`.
    pub fn average(&self, cores: usize, until_s: f64) -> Vec<f64> {
        let mut sum = vec![0.0; cores];
        if until_s <= 0.0 {
            return self.phases.first().map_or(sum, |(_, w)| w.clone());
        }
        for (k, (start, weights)) in self.phases.iter().enumerate() {
            let end = self.phases.get(k + 1).map_or(until_s, |(next, _)| next.min(until_s));
            let span = end - start;
            if span > 0.0 {
                for (s, w) in sum.iter_mut().zip(weights) {
                    *s += w * span;
                }
            }
        }
        sum.iter_mut().for_each(|s| *s /= until_s);
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pinlearn_experiment::Scenario;

    #[test]
    fn loaded_cores_get_the_weight_and_averages_follow_the_phases() {
        let scenario: Scenario = "A.3".parse().expect("valid");
        let schedule =
            BackgroundSchedule::from_load(&scenario.load_schedule(&[3, 2], 30.0, 100.0), 5, 2.0, LoadSession::Same);
        assert_eq!(schedule.phases()[0], (0.0, vec![0.0; 5]));
        assert_eq!(schedule.phases()[1], (10.0, vec![2.0, 2.0, 0.0, 2.0, 0.0]));
        assert_eq!(schedule.phase_at(15.0), Some(1));
        assert_eq!(schedule.phase_at(5.0), Some(0));
        let average = schedule.average(5, 30.0);
        assert!((average[0] - 4.0 / 3.0).abs() < 1e-12, "{average:?}");
        assert_eq!(average[2], 0.0);
        let idle = BackgroundSchedule::idle(3);
        assert_eq!(idle.average(3, 10.0), vec![0.0; 3]);
    }
}
