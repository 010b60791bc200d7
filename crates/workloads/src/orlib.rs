//! OR-Library single-machine total weighted tardiness (SMTWTP) instances,
//! embedded from `data/orlib-wt/`, and the objective they are scored by.
//!
//! ```text
//!   "wt40:7" ─► WtSet::Wt40, instance 7 ─► wt40.txt (125 instances back to back:
//!                                           40 processing times, 40 weights, 40 due dates)
//!                                        ─► wtopt40.txt line 7 (optimum, or best known)
//!            ─► (WtInstance, KnownValue) ─► total_weighted_tardiness(instance, order)
//! ```
//!
//! Data: J. E. Beasley's OR-Library (MIT licence, see `data/README.md`). The
//! values for n = 40 and 50 are optimal except the instances listed in
//! [`WtSet::unproven`], which are the best known to Crauwels, Potts & Van
//! Wassenhove (1996); the n = 100 values are best known (`wtbest100b`).

use crate::common::WorkError;

const WT40: &str = include_str!("../data/orlib-wt/wt40.txt");
const WT50: &str = include_str!("../data/orlib-wt/wt50.txt");
const WT100: &str = include_str!("../data/orlib-wt/wt100.txt");
const WTOPT40: &str = include_str!("../data/orlib-wt/wtopt40.txt");
const WTOPT50: &str = include_str!("../data/orlib-wt/wtopt50.txt");
const WTBEST100B: &str = include_str!("../data/orlib-wt/wtbest100b.txt");

/// Instances in every OR-Library weighted tardiness file.
pub const INSTANCES_PER_SET: usize = 125;

/// One of the three OR-Library instance files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WtSet {
    Wt40,
    Wt50,
    Wt100,
}

impl WtSet {
    /// Parses the set name as written in `--instance` (`wt40`, `wt50`, `wt100`).
    pub fn from_name(name: &str) -> Option<WtSet> {
        match name {
            "wt40" => Some(WtSet::Wt40),
            "wt50" => Some(WtSet::Wt50),
            "wt100" => Some(WtSet::Wt100),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            WtSet::Wt40 => "wt40",
            WtSet::Wt50 => "wt50",
            WtSet::Wt100 => "wt100",
        }
    }

    /// Jobs per instance.
    pub fn jobs(self) -> usize {
        match self {
            WtSet::Wt40 => 40,
            WtSet::Wt50 => 50,
            WtSet::Wt100 => 100,
        }
    }

    fn instance_text(self) -> &'static str {
        match self {
            WtSet::Wt40 => WT40,
            WtSet::Wt50 => WT50,
            WtSet::Wt100 => WT100,
        }
    }

    fn values_text(self) -> (&'static str, &'static str) {
        match self {
            WtSet::Wt40 => (WTOPT40, "wtopt40.txt"),
            WtSet::Wt50 => (WTOPT50, "wtopt50.txt"),
            WtSet::Wt100 => (WTBEST100B, "wtbest100b.txt"),
        }
    }

    /// 1-based instances whose value is only the best known, not a proven optimum.
    /// `None` means every value of the set is only best known.
    pub fn unproven(self) -> Option<&'static [usize]> {
        match self {
            WtSet::Wt40 => Some(&[19]),
            WtSet::Wt50 => Some(&[11, 12, 14, 19, 36, 44, 66, 87, 88, 111]),
            WtSet::Wt100 => None,
        }
    }

    /// All 125 instances of the set, in file order.
    pub fn instances(self) -> Result<Vec<WtInstance>, WorkError> {
        parse_instances(self.instance_text(), self.jobs(), self.name())
    }

    /// The optimal (or best known) value of every instance, in file order.
    pub fn known_values(self) -> Result<Vec<u64>, WorkError> {
        let (text, file) = self.values_text();
        let values = parse_integers(text, file)?;
        if values.len() != INSTANCES_PER_SET {
            return Err(WorkError::BadInput(format!(
                "{file} holds {} values, expected {INSTANCES_PER_SET}",
                values.len()
            )));
        }
        Ok(values)
    }
}

/// One SMTWTP instance: job j takes `processing[j]` time units, weighs
/// `weights[j]` and is due at `due[j]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WtInstance {
    /// `wt40:1` style name (1-based index).
    pub name: String,
    pub processing: Vec<u64>,
    pub weights: Vec<u64>,
    pub due: Vec<u64>,
}

impl WtInstance {
    pub fn jobs(&self) -> usize {
        self.processing.len()
    }
}

/// The reference value an instance's result is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownValue {
    pub value: u64,
    /// `false` when the value is only the best known solution.
    pub proven_optimal: bool,
}

/// Loads `set:index` (1-based), e.g. `wt40:1`, with its known value.
pub fn load(spec: &str) -> Result<(WtInstance, KnownValue), WorkError> {
    let bad = || {
        WorkError::BadInput(format!(
            "--instance {spec:?}: expected SET:INDEX with SET wt40, wt50 or wt100 and INDEX 1..={INSTANCES_PER_SET}, e.g. wt40:1"
        ))
    };
    let (set_name, index) = spec.split_once(':').ok_or_else(bad)?;
    let set = WtSet::from_name(set_name).ok_or_else(bad)?;
    let index: usize = index.parse().map_err(|_| bad())?;
    if !(1..=INSTANCES_PER_SET).contains(&index) {
        return Err(bad());
    }
    let instance = set.instances()?.swap_remove(index - 1);
    let value = set.known_values()?[index - 1];
    let proven_optimal = set.unproven().is_some_and(|unproven| !unproven.contains(&index));
    Ok((instance, KnownValue { value, proven_optimal }))
}

fn parse_integers(text: &str, file: &str) -> Result<Vec<u64>, WorkError> {
    text.split_whitespace()
        .map(|word| {
            word.parse()
                .map_err(|_| WorkError::BadInput(format!("{file}: {word:?} is not a non-negative integer")))
        })
        .collect()
}

/// Parses a file of 125 instances of `jobs` jobs each, read as one stream of integers.
fn parse_instances(text: &str, jobs: usize, set_name: &str) -> Result<Vec<WtInstance>, WorkError> {
    let numbers = parse_integers(text, &format!("{set_name}.txt"))?;
    if numbers.len() != INSTANCES_PER_SET * 3 * jobs {
        return Err(WorkError::BadInput(format!(
            "{set_name}.txt holds {} integers, expected {INSTANCES_PER_SET} instances x 3 x {jobs}",
            numbers.len()
        )));
    }
    Ok(numbers
        .chunks_exact(3 * jobs)
        .enumerate()
        .map(|(i, block)| WtInstance {
            name: format!("{set_name}:{}", i + 1),
            processing: block[..jobs].to_vec(),
            weights: block[jobs..2 * jobs].to_vec(),
            due: block[2 * jobs..].to_vec(),
        })
        .collect())
}

/// Total weighted tardiness of processing the jobs in `order` (a permutation
/// of the job indices) back to back from time 0: sum of w_j * max(0, C_j - d_j).
pub fn total_weighted_tardiness(instance: &WtInstance, order: &[usize]) -> u64 {
    let mut time = 0;
    let mut total = 0;
    for &job in order {
        time += instance.processing[job];
        total += instance.weights[job] * time.saturating_sub(instance.due[job]);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_set_has_125_instances_of_its_size() {
        for set in [WtSet::Wt40, WtSet::Wt50, WtSet::Wt100] {
            let instances = set.instances().expect("embedded file parses");
            assert_eq!(instances.len(), INSTANCES_PER_SET);
            for instance in &instances {
                assert_eq!(instance.jobs(), set.jobs());
                assert_eq!((instance.weights.len(), instance.due.len()), (set.jobs(), set.jobs()));
                // OR-Library generation: p in [1, 100], w in [1, 10].
                assert!(
                    instance.processing.iter().all(|p| (1..=100).contains(p)),
                    "{}",
                    instance.name
                );
                assert!(
                    instance.weights.iter().all(|w| (1..=10).contains(w)),
                    "{}",
                    instance.name
                );
            }
            assert_eq!(set.known_values().expect("values parse").len(), INSTANCES_PER_SET);
        }
    }

    #[test]
    fn first_wt40_instance_matches_the_file() {
        let (instance, known) = load("wt40:1").expect("loads");
        assert_eq!(instance.name, "wt40:1");
        assert_eq!(&instance.processing[..5], &[26, 24, 79, 46, 32]);
        assert_eq!(&instance.weights[..5], &[1, 10, 9, 10, 10]);
        assert_eq!(
            known,
            KnownValue {
                value: 913,
                proven_optimal: true
            }
        );
        let (_, last) = load("wt40:125").expect("loads");
        assert_eq!(
            last.value,
            WTOPT40
                .split_whitespace()
                .last()
                .expect("values")
                .parse::<u64>()
                .expect("integer")
        );
    }

    #[test]
    fn unproven_values_are_flagged() {
        assert!(!load("wt40:19").expect("loads").1.proven_optimal);
        assert!(load("wt40:18").expect("loads").1.proven_optimal);
        assert!(!load("wt50:111").expect("loads").1.proven_optimal);
        assert!(!load("wt100:1").expect("loads").1.proven_optimal);
    }

    #[test]
    fn bad_instance_names_are_rejected() {
        for spec in ["wt40", "wt40:0", "wt40:126", "wt41:1", "wt40:x", ""] {
            assert!(matches!(load(spec), Err(WorkError::BadInput(_))), "{spec}");
        }
    }

    #[test]
    fn tardiness_of_a_hand_computed_schedule() {
        let instance = WtInstance {
            name: "hand".into(),
            processing: vec![3, 2, 4],
            weights: vec![1, 5, 2],
            due: vec![2, 4, 10],
        };
        // order 0,1,2: C = 3, 5, 9 -> T = 1, 1, 0 -> 1*1 + 5*1 = 6
        assert_eq!(total_weighted_tardiness(&instance, &[0, 1, 2]), 6);
        // order 2,0,1: C = 4, 7, 9 -> T = 0, 5, 5 -> 5 + 25 = 30
        assert_eq!(total_weighted_tardiness(&instance, &[2, 0, 1]), 30);
    }
}
