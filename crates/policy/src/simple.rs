//! The two baselines the learner is measured against.
//!
//! ```text
//!   OsPolicy:      every thread ──► layout.whole()  (never pins; Linux decides)
//!   StaticPolicy:  k-th thread ever seen ──► all_cores[k mod ncores], kept for life
//! ```
//!
//! Both report each thread's own sanitised speed as its utility (NaN when
//! unknown), so traces of every policy can be read the same way.

use crate::layout::Layout;
use crate::objective::sanitise_speed;
use crate::{Decision, PeriodInput, Policy, ThreadKey};

/// Leaves placement to the operating system: every thread gets the place
/// spanning the whole machine.
#[derive(Clone, Debug)]
pub struct OsPolicy {
    whole: usize,
}

impl OsPolicy {
    pub fn new(layout: Layout) -> Self {
        OsPolicy { whole: layout.whole() }
    }
}

impl Policy for OsPolicy {
    fn name(&self) -> String {
        "os".to_string()
    }

    fn decide(&mut self, input: &PeriodInput<'_>) -> Decision {
        Decision {
            place: vec![self.whole; input.threads.len()],
            utility: own_speeds(input),
        }
    }
}

/// Pins threads round-robin over the cores once, in the order they appear,
/// and never moves them.
#[derive(Clone, Debug)]
pub struct StaticPolicy {
    cores: Vec<usize>,
    /// Threads ever seen so far.
    seen: u64,
    /// Live threads and their core, sorted by key.
    assigned: Vec<(ThreadKey, usize)>,
}

impl StaticPolicy {
    pub fn new(layout: Layout) -> Self {
        StaticPolicy {
            cores: layout.all_cores().collect(),
            seen: 0,
            assigned: Vec::new(),
        }
    }
}

impl Policy for StaticPolicy {
    fn name(&self) -> String {
        "static".to_string()
    }

    fn decide(&mut self, input: &PeriodInput<'_>) -> Decision {
        // Merge the sorted live list with the sorted previous one: matched
        // threads keep their core, new ones take the next core in turn,
        // ended ones are dropped.
        let mut previous = self.assigned.iter().peekable();
        let mut assigned = Vec::with_capacity(input.threads.len());
        for sample in input.threads {
            while previous.next_if(|(key, _)| *key < sample.key).is_some() {}
            let core = match previous.next_if(|(key, _)| *key == sample.key) {
                Some(&(_, core)) => core,
                None => {
                    let core = self.cores[(self.seen % self.cores.len() as u64) as usize];
                    self.seen += 1;
                    core
                }
            };
            assigned.push((sample.key, core));
        }
        let place = assigned.iter().map(|&(_, core)| core).collect();
        self.assigned = assigned;
        Decision {
            place,
            utility: own_speeds(input),
        }
    }
}

fn own_speeds(input: &PeriodInput<'_>) -> Vec<f64> {
    input
        .threads
        .iter()
        .map(|t| sanitise_speed(t.speed).unwrap_or(f64::NAN))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ThreadSample;

    fn samples(keys: &[ThreadKey]) -> Vec<ThreadSample> {
        keys.iter().map(|&key| ThreadSample::of(key, Some(0.5))).collect()
    }

    fn input(threads: &[ThreadSample]) -> PeriodInput<'_> {
        PeriodInput::of(0, 0.0, threads)
    }

    #[test]
    fn os_never_pins() {
        let layout = Layout::uniform(2, 3);
        let mut os = OsPolicy::new(layout.clone());
        let threads = vec![
            ThreadSample::of(1, Some(0.5)),
            ThreadSample::of(2, None),
            ThreadSample::of(3, Some(-1.0)),
        ];
        let decision = os.decide(&input(&threads));
        assert_eq!(decision.place, vec![layout.whole(); 3]);
        assert_eq!(decision.utility[0], 0.5);
        assert!(decision.utility[1].is_nan());
        assert_eq!(decision.utility[2], 0.0);
        assert_eq!(os.name(), "os");
        assert_eq!(os.decide(&input(&[])), Decision::default());
    }

    #[test]
    fn static_assigns_round_robin_once_and_keeps_it() {
        let layout = Layout::uniform(2, 2); // cores are places 0, 1, 3, 4
        let mut policy = StaticPolicy::new(layout);
        assert_eq!(policy.name(), "static");
        assert_eq!(policy.decide(&input(&samples(&[10, 20, 30]))).place, vec![0, 1, 3]);
        // 20 ends, 40 and 50 arrive: the 4th and 5th threads ever seen.
        assert_eq!(
            policy.decide(&input(&samples(&[10, 30, 40, 50]))).place,
            vec![0, 3, 4, 0]
        );
        assert_eq!(
            policy.decide(&input(&samples(&[10, 30, 40, 50]))).place,
            vec![0, 3, 4, 0]
        );
        assert_eq!(policy.decide(&input(&samples(&[5, 50]))).place, vec![1, 0]);
    }
}
