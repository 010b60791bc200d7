//! The papers' experiment matrix as named scenarios: how many cores the
//! program gets and what the other programs do on them over time.
//!
//! ```text
//!   "B.3" ─parse─► Scenario { resources: Medium, availability: TimeVarying }
//!     │
//!     ├─ cores_for(threads, topology) ─► the first cores of every node, evenly:
//!     │      A (small)  threads/4 cores, B (medium) threads/2, C (large) threads/1,
//!     │      D          threads/2;   at most the machine's cores
//!     │
//!     └─ background(used cores, T, weight) ─► BackgroundSchedule: [(from_s, weight per core)]
//!            .1 uniform       nothing
//!            .2 non-uniform   `weight` on the first half of every node's cores, always
//!            .3 time-varying  the same cores, off for T/3, then on T/3, off T/3, ...
//!            D                `weight` on every core of node k during [kT/4, (k+1)T/4),
//!                             k cycling over the nodes
//! ```
//!
//! Paper 000 (Table V) ran 8 background threads on the first 4 of 10 or 20
//! cores; paper 002 (Table 1) ran them on the first 6 cores of both nodes and
//! started them a minute into the run, and in its set D alternated them
//! between the nodes. `T` is `--duration`, the run's length on idle cores.

use std::fmt;
use std::str::FromStr;

use pinlearn_topology::{CpuSet, Topology};

/// Resource availability: how many threads share a core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resources {
    /// A: about 4 threads per core.
    Small,
    /// B: about 2 threads per core.
    Medium,
    /// C: about 1 thread per core.
    Large,
}

impl Resources {
    pub fn threads_per_core(self) -> f64 {
        match self {
            Resources::Small => 4.0,
            Resources::Medium => 2.0,
            Resources::Large => 1.0,
        }
    }

    fn letter(self) -> char {
        match self {
            Resources::Small => 'A',
            Resources::Medium => 'B',
            Resources::Large => 'C',
        }
    }
}

/// CPU availability: what other programs do on the cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Availability {
    /// 1: no background load.
    Uniform,
    /// 2: background load on part of the cores for the whole run.
    NonUniform,
    /// 3: the same load, coming and going.
    TimeVarying,
}

/// A named scenario: `A.1` ... `C.3`, or `D`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scenario {
    Matrix {
        resources: Resources,
        availability: Availability,
    },
    /// Medium resources, the load alternating between the NUMA nodes.
    AlternatingNodes,
}

/// A scenario name that is not one of the matrix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown scenario \"{0}\": use A.1 to C.3 (resources A/B/C = 4/2/1 threads per core, availability 1/2/3 = uniform/non-uniform/time-varying) or D (load alternating between nodes)"
)]
pub struct ParseScenarioError(pub String);

impl Scenario {
    /// The whole matrix: A.1 ... C.3, then D when the machine has 2+ nodes.
    pub fn all(nodes: usize) -> Vec<Scenario> {
        let mut all = Vec::new();
        for resources in [Resources::Small, Resources::Medium, Resources::Large] {
            for availability in [
                Availability::Uniform,
                Availability::NonUniform,
                Availability::TimeVarying,
            ] {
                all.push(Scenario::Matrix {
                    resources,
                    availability,
                });
            }
        }
        if nodes > 1 {
            all.push(Scenario::AlternatingNodes);
        }
        all
    }

    /// The default set: where the OS should win (C.1), where learning should
    /// (A.2), time-varying load (B.3) and, on 2+ nodes, D.
    pub fn default_set(nodes: usize) -> Vec<Scenario> {
        let mut set: Vec<Scenario> = ["A.2", "B.3", "C.1"]
            .iter()
            .map(|name| name.parse().expect("built-in scenario names parse"))
            .collect();
        if nodes > 1 {
            set.push(Scenario::AlternatingNodes);
        }
        set
    }

    /// Parses a comma-separated list, e.g. `A.1,B.2`.
    pub fn parse_list(list: &str) -> Result<Vec<Scenario>, ParseScenarioError> {
        list.split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(str::parse)
            .collect()
    }

    pub fn resources(self) -> Resources {
        match self {
            Scenario::Matrix { resources, .. } => resources,
            Scenario::AlternatingNodes => Resources::Medium,
        }
    }

    /// Whether the background load stays the same for the whole run (the
    /// load model's makespan is then meaningful).
    pub fn constant_load(self) -> bool {
        matches!(
            self,
            Scenario::Matrix {
                availability: Availability::Uniform | Availability::NonUniform,
                ..
            }
        )
    }

    /// The CPUs the program may use: `threads / threads-per-core` cores
    /// (at least 1, at most all), spread evenly over the nodes, the first
    /// cores of each node.
    pub fn cpus_for(self, threads: usize, topology: &Topology) -> CpuSet {
        let total = topology.core_count();
        let wanted = ((threads as f64 / self.resources().threads_per_core()).round() as usize).clamp(1, total);
        let nodes = topology.nodes();
        let mut per_node = vec![0usize; nodes.len()];
        let mut left = wanted;
        // Round-robin one core at a time over the nodes that still have cores.
        while left > 0 {
            for (count, node) in per_node.iter_mut().zip(nodes) {
                if left > 0 && *count < node.cores.len() {
                    *count += 1;
                    left -= 1;
                }
            }
        }
        let mut cpus = CpuSet::new();
        for (count, node) in per_node.iter().zip(nodes) {
            for core in &node.cores[..*count] {
                cpus = cpus.union(core);
            }
        }
        cpus
    }

    /// The background load over time on the program's cores, given as the
    /// number of cores of each node (in core order), the nominal run length
    /// `nominal_s` and the weight of the load on a loaded core. Phases are
    /// generated up to `horizon_s`.
    pub fn background(
        self,
        cores_per_node: &[usize],
        nominal_s: f64,
        weight: f64,
        horizon_s: f64,
    ) -> BackgroundSchedule {
        let cores: usize = cores_per_node.iter().sum();
        let half_of_each_node = || {
            let mut weights = Vec::with_capacity(cores);
            for &count in cores_per_node {
                let loaded = count.div_ceil(2);
                weights.extend((0..count).map(|core| if core < loaded { weight } else { 0.0 }));
            }
            weights
        };
        let idle = vec![0.0; cores];
        let mut phases = Vec::new();
        match self {
            Scenario::Matrix {
                availability: Availability::Uniform,
                ..
            } => phases.push((0.0, idle)),
            Scenario::Matrix {
                availability: Availability::NonUniform,
                ..
            } => phases.push((0.0, half_of_each_node())),
            Scenario::Matrix {
                availability: Availability::TimeVarying,
                ..
            } => {
                let third = nominal_s / 3.0;
                let loaded = half_of_each_node();
                let mut k = 0u64;
                while (k as f64) * third <= horizon_s {
                    let on = k % 2 == 1;
                    phases.push((k as f64 * third, if on { loaded.clone() } else { idle.clone() }));
                    k += 1;
                }
            }
            Scenario::AlternatingNodes => {
                let quarter = nominal_s / 4.0;
                let mut k = 0u64;
                while (k as f64) * quarter <= horizon_s {
                    let node = (k as usize) % cores_per_node.len().max(1);
                    let first: usize = cores_per_node[..node].iter().sum();
                    let mut weights = idle.clone();
                    for w in &mut weights[first..first + cores_per_node[node]] {
                        *w = weight;
                    }
                    phases.push((k as f64 * quarter, weights));
                    k += 1;
                }
            }
        }
        BackgroundSchedule { phases }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scenario::Matrix {
                resources,
                availability,
            } => {
                let digit = match availability {
                    Availability::Uniform => 1,
                    Availability::NonUniform => 2,
                    Availability::TimeVarying => 3,
                };
                write!(f, "{}.{digit}", resources.letter())
            }
            Scenario::AlternatingNodes => f.write_str("D"),
        }
    }
}

impl FromStr for Scenario {
    type Err = ParseScenarioError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let name = text.trim().to_ascii_uppercase();
        if name == "D" {
            return Ok(Scenario::AlternatingNodes);
        }
        let bad = || ParseScenarioError(text.trim().to_string());
        let (letter, digit) = name.split_once('.').ok_or_else(bad)?;
        let resources = match letter {
            "A" => Resources::Small,
            "B" => Resources::Medium,
            "C" => Resources::Large,
            _ => return Err(bad()),
        };
        let availability = match digit {
            "1" => Availability::Uniform,
            "2" => Availability::NonUniform,
            "3" => Availability::TimeVarying,
            _ => return Err(bad()),
        };
        Ok(Scenario::Matrix {
            resources,
            availability,
        })
    }
}

/// Background load per core over time: piecewise constant.
#[derive(Clone, Debug, PartialEq)]
pub struct BackgroundSchedule {
    /// (start in seconds, weight per core), sorted by start, the first at 0.
    phases: Vec<(f64, Vec<f64>)>,
}

impl BackgroundSchedule {
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

    #[test]
    fn every_name_parses_and_prints_back() {
        for scenario in Scenario::all(2) {
            let name = scenario.to_string();
            assert_eq!(name.parse::<Scenario>(), Ok(scenario));
        }
        assert_eq!(Scenario::all(2).len(), 10);
        assert_eq!(Scenario::all(1).len(), 9);
        assert_eq!("b.2".parse::<Scenario>().unwrap().to_string(), "B.2");
        assert_eq!(
            Scenario::parse_list(" A.1, C.3 ,d").unwrap(),
            vec![
                "A.1".parse().unwrap(),
                "C.3".parse().unwrap(),
                Scenario::AlternatingNodes
            ]
        );
    }

    #[test]
    fn bad_names_give_one_clear_line() {
        for bad in ["E.1", "A.4", "A", "A.", "", "B2", "A.1.1"] {
            let err = bad.parse::<Scenario>().unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("unknown scenario \"{}\"", bad.trim())),
                "{err}"
            );
            assert!(err.contains("A.1 to C.3"), "{err}");
            assert!(!err.contains('\n'));
        }
        let err = Scenario::parse_list("A.1,X.9").unwrap_err();
        assert_eq!(err.0, "X.9");
    }

    #[test]
    fn resources_pick_cores_evenly_over_nodes() {
        let topo = Topology::from_synthetic("node:2 core:14 pu:1").unwrap();
        let a: Scenario = "A.1".parse().unwrap();
        assert_eq!(a.cpus_for(40, &topo).to_string(), "0-4,14-18");
        let b: Scenario = "B.1".parse().unwrap();
        assert_eq!(b.cpus_for(40, &topo).to_string(), "0-9,14-23");
        let c: Scenario = "C.1".parse().unwrap();
        assert_eq!(c.cpus_for(40, &topo).len(), 28, "capped at the machine");
        assert_eq!(c.cpus_for(3, &topo).to_string(), "0-1,14");
        assert_eq!(a.cpus_for(1, &topo).len(), 1);
    }

    #[test]
    fn background_patterns_follow_the_papers() {
        let counts = [3, 2];
        let uniform: Scenario = "A.1".parse().unwrap();
        assert_eq!(uniform.background(&counts, 30.0, 2.0, 300.0).phases().len(), 1);
        let nonuniform: Scenario = "A.2".parse().unwrap();
        assert_eq!(
            nonuniform.background(&counts, 30.0, 2.0, 300.0).phases(),
            &[(0.0, vec![2.0, 2.0, 0.0, 2.0, 0.0])]
        );
        let varying: Scenario = "A.3".parse().unwrap();
        let schedule = varying.background(&counts, 30.0, 2.0, 100.0);
        assert_eq!(schedule.phases()[0], (0.0, vec![0.0; 5]));
        assert_eq!(schedule.phases()[1], (10.0, vec![2.0, 2.0, 0.0, 2.0, 0.0]));
        assert_eq!(schedule.phases()[2].1, vec![0.0; 5]);
        assert_eq!(schedule.phase_at(15.0), Some(1));
        let average = schedule.average(5, 30.0);
        assert!((average[0] - 2.0 / 3.0).abs() < 1e-12, "{average:?}");
        let alternating = Scenario::AlternatingNodes.background(&counts, 40.0, 1.0, 100.0);
        assert_eq!(alternating.phases()[0].1, vec![1.0, 1.0, 1.0, 0.0, 0.0]);
        assert_eq!(alternating.phases()[1], (10.0, vec![0.0, 0.0, 0.0, 1.0, 1.0]));
        assert_eq!(alternating.phases()[2].1, vec![1.0, 1.0, 1.0, 0.0, 0.0]);
        assert!(!Scenario::AlternatingNodes.constant_load());
        assert!(nonuniform.constant_load());
    }
}
