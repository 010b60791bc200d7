//! Helpers shared by the simulator's integration tests: one seeded run of
//! a scheduler in a scenario, reduced to its completion time.

use pinlearn_engine::PolicyChoice;
use pinlearn_experiment::Scheduler;
use pinlearn_sim::Experiment;

/// Completion of `choice` in `scenario` with seed 1, simulated seconds.
pub fn completion(experiment: &Experiment, scenario: &str, choice: PolicyChoice) -> f64 {
    let prepared = experiment.prepare(scenario.parse().unwrap()).unwrap();
    let run = experiment.run(&prepared, Scheduler::policy(choice), 0, 1).unwrap();
    run.record.completion_s.expect("the run completes")
}
