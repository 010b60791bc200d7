//! The papers' scenarios, scaled to the CPUs the bench may use.
//!
//! ```text
//!   "C.2"  ─► Scenario { level: Large, availability: NonUniform }
//!                │ threads(cores) = threads per core (A 4, B 2, C 1) x cores
//!                │ load_plan(cores, run length) ─► LoadPlan: which half of the
//!                ▼                                 cores is loaded, and when
//!   LEVEL.AVAILABILITY, LEVEL in A B C, AVAILABILITY in 1 2 3 D; "D" alone is B.D
//! ```
//!
//! Resource availability (paper 000 Table V, paper 002 Table 1): small,
//! medium and large are 4, 2 and 1 workload threads per core. CPU
//! availability: 1 uniform (no other load), 2 non-uniform (another program
//! loads the first half of the cores for the whole run), 3 time-varying
//! (that load starts a third of the way into the run, as in paper 002 where
//! it started after a minute), D (the load alternates between the two halves
//! every third of a run; paper 002 alternated it between NUMA nodes).
//! "The first half" is the first ⌊cores/2⌋ cores, at least one.

use crate::BenchError;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// How many workload threads there are per core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// A: small resource availability, 4 threads per core.
    Small,
    /// B: medium, 2 threads per core.
    Medium,
    /// C: large, 1 thread per core.
    Large,
}

/// When and where the background load runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Availability {
    /// 1: no other load.
    Uniform,
    /// 2: the first half of the cores loaded for the whole run.
    NonUniform,
    /// 3: that load starts a third of the way into the run.
    TimeVarying,
    /// D: the load alternates between the halves every third of a run.
    Alternating,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Scenario {
    pub level: Level,
    pub availability: Availability,
}

/// The background load of one run, in terms of the halves of the cores.
#[derive(Clone, Debug, PartialEq)]
pub enum LoadPlan {
    None,
    /// The first half, from the start to the end.
    FirstHalf,
    /// The first half, from `after` to the end.
    FirstHalfFrom {
        after: Duration,
    },
    /// The first half for `period`, then the second, then the first...
    Alternating {
        period: Duration,
    },
}

impl Level {
    pub fn threads_per_core(self) -> usize {
        match self {
            Level::Small => 4,
            Level::Medium => 2,
            Level::Large => 1,
        }
    }

    fn letter(self) -> char {
        match self {
            Level::Small => 'A',
            Level::Medium => 'B',
            Level::Large => 'C',
        }
    }
}

impl Scenario {
    /// Workload threads on `cores` cores.
    pub fn threads(&self, cores: usize) -> usize {
        self.level.threads_per_core() * cores.max(1)
    }

    /// The load for a run expected to last `run_length` without load.
    pub fn load_plan(&self, run_length: Duration) -> LoadPlan {
        match self.availability {
            Availability::Uniform => LoadPlan::None,
            Availability::NonUniform => LoadPlan::FirstHalf,
            Availability::TimeVarying => LoadPlan::FirstHalfFrom { after: run_length / 3 },
            Availability::Alternating => LoadPlan::Alternating { period: run_length / 3 },
        }
    }

    /// True when the load changes during the run, so the bench must know
    /// how long a run lasts (from a calibration run).
    pub fn needs_run_length(&self) -> bool {
        matches!(self.availability, Availability::TimeVarying | Availability::Alternating)
    }

    /// The scenario's exchangeable cores: groups of core indices that the
    /// load treats alike, so swapping their threads cannot change a static
    /// pinning's outcome (used to drop duplicate best-static candidates).
    pub fn core_groups(&self, cores: usize) -> Vec<Vec<usize>> {
        match self.availability {
            _ if cores <= 1 => vec![(0..cores.max(1)).collect()],
            Availability::Uniform => vec![(0..cores).collect()],
            _ => {
                let (first, second) = halves(cores);
                [first, second].into_iter().filter(|g| !g.is_empty()).collect()
            }
        }
    }

    /// A description for tables and docs.
    pub fn describe(&self) -> String {
        let level = match self.level {
            Level::Small => "small (4 threads/core)",
            Level::Medium => "medium (2 threads/core)",
            Level::Large => "large (1 thread/core)",
        };
        let load = match self.availability {
            Availability::Uniform => "no load",
            Availability::NonUniform => "first half of the cores loaded",
            Availability::TimeVarying => "load on the first half from 1/3 of the run",
            Availability::Alternating => "load alternating between halves",
        };
        format!("{level}, {load}")
    }
}

/// Core indices of the first half (⌊n/2⌋ cores, at least one) and of the rest
/// (with one core, both halves are that core).
pub fn halves(cores: usize) -> (Vec<usize>, Vec<usize>) {
    if cores <= 1 {
        return (vec![0], vec![0]);
    }
    let split = cores / 2;
    ((0..split).collect(), (split..cores).collect())
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let availability = match self.availability {
            Availability::Uniform => "1",
            Availability::NonUniform => "2",
            Availability::TimeVarying => "3",
            Availability::Alternating => "D",
        };
        if self.availability == Availability::Alternating && self.level == Level::Medium {
            return f.write_str("D");
        }
        write!(f, "{}.{availability}", self.level.letter())
    }
}

impl FromStr for Scenario {
    type Err = BenchError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim().to_ascii_uppercase();
        let bad = || {
            BenchError::BadInput(format!(
                "unknown scenario {s:?}: write LEVEL.LOAD with LEVEL A, B or C and LOAD 1, 2, 3 or D (e.g. C.2), or D"
            ))
        };
        if text == "D" {
            return Ok(Scenario {
                level: Level::Medium,
                availability: Availability::Alternating,
            });
        }
        let (level, availability) = text.split_once('.').ok_or_else(bad)?;
        let level = match level {
            "A" => Level::Small,
            "B" => Level::Medium,
            "C" => Level::Large,
            _ => return Err(bad()),
        };
        let availability = match availability {
            "1" => Availability::Uniform,
            "2" => Availability::NonUniform,
            "3" => Availability::TimeVarying,
            "D" => Availability::Alternating,
            _ => return Err(bad()),
        };
        Ok(Scenario { level, availability })
    }
}

/// Parses a comma-separated scenario list, rejecting duplicates.
pub fn parse_list(list: &str) -> Result<Vec<Scenario>, BenchError> {
    let mut scenarios: Vec<Scenario> = Vec::new();
    for item in list.split(',').filter(|s| !s.trim().is_empty()) {
        let scenario: Scenario = item.parse()?;
        if scenarios.contains(&scenario) {
            return Err(BenchError::BadInput(format!("scenario {scenario} is listed twice")));
        }
        scenarios.push(scenario);
    }
    if scenarios.is_empty() {
        return Err(BenchError::BadInput("--scenarios is empty: give e.g. C.1,C.2".into()));
    }
    Ok(scenarios)
}

/// The papers' nine scenarios A.1 ... C.3, then D.
pub fn full_matrix() -> Vec<Scenario> {
    let mut all = Vec::new();
    for level in [Level::Small, Level::Medium, Level::Large] {
        for availability in [
            Availability::Uniform,
            Availability::NonUniform,
            Availability::TimeVarying,
        ] {
            all.push(Scenario { level, availability });
        }
    }
    all.push(Scenario {
        level: Level::Medium,
        availability: Availability::Alternating,
    });
    all
}

/// The quick matrix: one thread per core without load (where the papers lost
/// most to Linux) and with half the cores loaded (where Linux is blind to
/// busy-waiting).
pub fn quick_matrix() -> Vec<Scenario> {
    vec![
        Scenario {
            level: Level::Large,
            availability: Availability::Uniform,
        },
        Scenario {
            level: Level::Large,
            availability: Availability::NonUniform,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print_back() {
        for name in [
            "A.1", "A.2", "A.3", "B.1", "B.2", "B.3", "C.1", "C.2", "C.3", "D", "A.D", "C.D",
        ] {
            let scenario: Scenario = name.parse().expect(name);
            assert_eq!(scenario.to_string(), name);
        }
        assert_eq!("b.d".parse::<Scenario>().expect("B.D").to_string(), "D");
        let c2: Scenario = " c.2 ".parse().expect("case and spaces");
        assert_eq!(
            c2,
            Scenario {
                level: Level::Large,
                availability: Availability::NonUniform
            }
        );
    }

    #[test]
    fn bad_names_are_bad_input() {
        for bad in ["", "E.1", "A.4", "A", "A1", "1.A", "A.1.2"] {
            let err = bad.parse::<Scenario>().expect_err(bad);
            assert!(matches!(err, BenchError::BadInput(_)), "{bad}: {err}");
        }
        assert!(parse_list("C.1,C.1").is_err());
        assert!(parse_list(" , ").is_err());
        assert_eq!(parse_list("C.1, A.3").expect("valid").len(), 2);
    }

    #[test]
    fn threads_scale_with_cores() {
        let s = |name: &str| name.parse::<Scenario>().expect(name);
        assert_eq!(s("A.1").threads(2), 8);
        assert_eq!(s("B.2").threads(2), 4);
        assert_eq!(s("C.3").threads(16), 16);
        assert_eq!(s("C.1").threads(0), 1);
    }

    #[test]
    fn load_plans_follow_the_run_length() {
        let s = |name: &str| name.parse::<Scenario>().expect(name);
        let run = Duration::from_secs(3);
        assert_eq!(s("A.1").load_plan(run), LoadPlan::None);
        assert_eq!(s("A.2").load_plan(run), LoadPlan::FirstHalf);
        assert_eq!(
            s("B.3").load_plan(run),
            LoadPlan::FirstHalfFrom {
                after: Duration::from_secs(1)
            }
        );
        assert_eq!(
            s("D").load_plan(run),
            LoadPlan::Alternating {
                period: Duration::from_secs(1)
            }
        );
        assert!(s("C.3").needs_run_length() && s("D").needs_run_length());
        assert!(!s("C.2").needs_run_length());
    }

    #[test]
    fn halves_and_core_groups() {
        assert_eq!(halves(1), (vec![0], vec![0]));
        assert_eq!(halves(2), (vec![0], vec![1]));
        assert_eq!(halves(5), (vec![0, 1], vec![2, 3, 4]));
        let s = |name: &str| name.parse::<Scenario>().expect(name);
        assert_eq!(s("C.1").core_groups(4), vec![vec![0, 1, 2, 3]]);
        assert_eq!(s("C.2").core_groups(4), vec![vec![0, 1], vec![2, 3]]);
        assert_eq!(s("C.2").core_groups(1), vec![vec![0]]);
        assert_eq!(full_matrix().len(), 10);
        assert_eq!(full_matrix().last().map(ToString::to_string).as_deref(), Some("D"));
    }
}
