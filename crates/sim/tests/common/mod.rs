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

/// The median completion of `choice` in `scenario` over seeds 1..=`seeds`
/// (as `pinlearn sim --seeds N` reports it), simulated seconds.
#[allow(dead_code)] // not every test file uses it
pub fn median_completion(experiment: &Experiment, scenario: &str, choice: PolicyChoice, seeds: u64) -> f64 {
    let prepared = experiment.prepare(scenario.parse().unwrap()).unwrap();
    let times: Vec<f64> = (1..=seeds)
        .map(|seed| {
            let run = experiment
                .run(&prepared, Scheduler::policy(choice), seed as usize - 1, seed)
                .unwrap();
            run.record.completion_s.expect("the run completes")
        })
        .collect();
    pinlearn_report::stats(&times).expect("at least one seed").median
}
