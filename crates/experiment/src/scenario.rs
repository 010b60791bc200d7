//! The papers' scenarios: how many threads share a core and what another
//! program does on the cores over time. One definition for the real machine
//! (`pinlearn bench`) and the modelled one (`pinlearn sim`): the same name on
//! the same topology means the same load.
//!
//! ```text
//!   "C.2" ─parse─► Scenario { level: Large, load: Constant }
//!     │
//!     ├─ level: threads per core   A 4, B 2, C 1
//!     │     threads_for(cores) = 4/2/1 x cores      (bench: the cores it has)
//!     │     cores_for(threads) = threads / 4/2/1    (sim: the threads it is told)
//!     │
//!     └─ load_schedule(cores_per_node, T) ─► LoadSchedule: [(from s, loaded core indices)]
//!          .1  none
//!          .2  the first half of every node's cores, the whole run
//!          .3  the same cores, from T/3 to the end
//!          .D  one group at a time, the next every T/3: the NUMA nodes on a
//!              machine with 2+ nodes, else the two halves of the cores
//!   LEVEL.LOAD with LEVEL in A B C and LOAD in 1 2 3 D; "D" alone is B.D.
//! ```
//!
//! "The first half" of a node's n cores is its first ⌈n/2⌉ cores (one core
//! of a one-core node). T is the run's length without load: the bench
//! measures it (a calibration run), the simulator is given it (`--duration`).
//!
//! Paper 000 (Table V) ran 8 background threads on the first 4 of 10 or 20
//! cores; paper 002 (Table 1) ran them on the first 6 cores of both nodes,
//! started them a minute into the run, and in its set D alternated them
//! between the nodes.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// Session of the other program (the background load), which decides how
/// Linux shares a loaded core. With autogroup (`sched_autogroup_enabled`,
/// the default of most distributions) every session is a task group: the
/// CPU is shared between groups first, and a group's weight is split over
/// the CPUs its runnable threads are on (measured on our machine: a thread
/// pinned beside another session's hog gets 1/3 of the core when its
/// sibling runs on the other CPU, 1/2 without autogroup; unpinned, Linux
/// keeps both threads off the hog's CPU). `pinlearn bench` starts its load
/// in this session, `pinlearn sim` models it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadSession {
    /// `pinlearn load --setsid`: its own session and autogroup (another user's job).
    Own,
    /// The workload's session: the load's threads compete thread against
    /// thread with the workload's.
    Same,
}

impl LoadSession {
    pub fn name(self) -> &'static str {
        match self {
            LoadSession::Own => "own",
            LoadSession::Same => "same",
        }
    }
}

impl fmt::Display for LoadSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LoadSession {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "own" => Ok(LoadSession::Own),
            "same" => Ok(LoadSession::Same),
            other => Err(format!("unknown load session {other:?}: use own or same")),
        }
    }
}

/// How many workload threads share a core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Level {
    /// A: small resource availability, 4 threads per core.
    Small,
    /// B: medium, 2 threads per core.
    Medium,
    /// C: large, 1 thread per core.
    Large,
}

/// What the other program does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Load {
    /// 1: no other load.
    None,
    /// 2: the first half of every node's cores, loaded for the whole run.
    Constant,
    /// 3: that load, from a third of the run to its end.
    Late,
    /// D: the load on one group of cores at a time, moving every third of a run.
    Alternating,
}

/// A named scenario: `A.1` ... `C.3`, `A.D` ... `C.D`; `D` is `B.D`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Scenario {
    pub level: Level,
    pub load: Load,
}

/// A scenario name that is not one of the matrix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown scenario \"{0}\": write LEVEL.LOAD with LEVEL A, B or C (4, 2, 1 threads per core) and LOAD 1, 2, 3 or D (none, half the cores, half from a third of the run, alternating), e.g. C.2, or D"
)]
pub struct ScenarioError(pub String);

/// A scenario list that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioListError {
    #[error(transparent)]
    Unknown(#[from] ScenarioError),
    #[error("scenario {0} is listed twice")]
    Twice(Scenario),
    #[error("the scenario list is empty: give names such as C.1,C.2")]
    Empty,
}

impl Level {
    pub fn threads_per_core(self) -> usize {
        match self {
            Level::Small => 4,
            Level::Medium => 2,
            Level::Large => 1,
        }
    }

    /// A, B or C.
    pub fn letter(self) -> char {
        match self {
            Level::Small => 'A',
            Level::Medium => 'B',
            Level::Large => 'C',
        }
    }
}

impl Scenario {
    /// Workload threads on `cores` cores (at least one core).
    pub fn threads_for(self, cores: usize) -> usize {
        self.level.threads_per_core() * cores.max(1)
    }

    /// Cores for `threads` threads: threads / threads-per-core rounded to
    /// the nearest, at least 1, at most `available`.
    pub fn cores_for(self, threads: usize, available: usize) -> usize {
        let per_core = self.level.threads_per_core() as f64;
        ((threads as f64 / per_core).round() as usize).clamp(1, available.max(1))
    }

    /// True when the load changes during the run, so its length must be
    /// known beforehand.
    pub fn load_changes(self) -> bool {
        matches!(self.load, Load::Late | Load::Alternating)
    }

    /// The load's schedule on cores grouped by node (`cores_per_node[n]` =
    /// the cores of node n, numbered node after node), for a run of
    /// `nominal_s` seconds without load; phases are generated up to
    /// `horizon_s` (a loaded run lasts longer than `nominal_s`).
    pub fn load_schedule(self, cores_per_node: &[usize], nominal_s: f64, horizon_s: f64) -> LoadSchedule {
        let half: Vec<usize> = node_ranges(cores_per_node)
            .flat_map(|(first, count)| first..first + count.div_ceil(2))
            .collect();
        let third = nominal_s / 3.0;
        let phases = match self.load {
            Load::None => vec![LoadPhase::new(0.0, Vec::new())],
            Load::Constant => vec![LoadPhase::new(0.0, half)],
            Load::Late => vec![LoadPhase::new(0.0, Vec::new()), LoadPhase::new(third, half)],
            Load::Alternating => {
                let groups = alternation_groups(cores_per_node);
                let mut phases = Vec::new();
                let mut k = 0usize;
                loop {
                    let start = k as f64 * third;
                    if k > 0 && (start > horizon_s || third <= 0.0) {
                        break;
                    }
                    phases.push(LoadPhase::new(start, groups[k % groups.len()].clone()));
                    k += 1;
                }
                phases
            }
        };
        LoadSchedule { phases }
    }

    /// Groups of core indices that the load treats alike (same node, loaded
    /// at the same times), so swapping their threads cannot change a fixed
    /// pinning's outcome: best-static tries one pinning per arrangement of
    /// threads over these groups.
    pub fn exchangeable_cores(self, cores_per_node: &[usize]) -> Vec<Vec<usize>> {
        let schedule = self.load_schedule(cores_per_node, 3.0, 3.0);
        let mut groups: Vec<(usize, Vec<bool>, Vec<usize>)> = Vec::new();
        for (node, (first, count)) in node_ranges(cores_per_node).enumerate() {
            for core in first..first + count {
                let pattern: Vec<bool> = schedule.phases.iter().map(|p| p.cores.contains(&core)).collect();
                match groups.iter_mut().find(|(n, p, _)| *n == node && *p == pattern) {
                    Some((_, _, members)) => members.push(core),
                    None => groups.push((node, pattern, vec![core])),
                }
            }
        }
        groups.into_iter().map(|(_, _, members)| members).collect()
    }

    /// A description for tables and docs.
    pub fn describe(self) -> String {
        let level = match self.level {
            Level::Small => "4 threads per core",
            Level::Medium => "2 threads per core",
            Level::Large => "1 thread per core",
        };
        let load = match self.load {
            Load::None => "no other load",
            Load::Constant => "the first half of each node's cores loaded",
            Load::Late => "the first half of each node's cores loaded from a third of the run",
            Load::Alternating => "the load moving between the nodes (or halves) every third of a run",
        };
        format!("{level}, {load}")
    }

    /// The papers' nine scenarios A.1 ... C.3, then D.
    pub fn full_matrix() -> Vec<Scenario> {
        let mut all = Vec::new();
        for level in [Level::Small, Level::Medium, Level::Large] {
            for load in [Load::None, Load::Constant, Load::Late] {
                all.push(Scenario { level, load });
            }
        }
        all.push(Scenario {
            level: Level::Medium,
            load: Load::Alternating,
        });
        all
    }

    /// One thread per core without load (where the papers lost most to
    /// Linux) and with half the cores loaded (where Linux can be blind).
    pub fn quick_matrix() -> Vec<Scenario> {
        vec![
            Scenario {
                level: Level::Large,
                load: Load::None,
            },
            Scenario {
                level: Level::Large,
                load: Load::Constant,
            },
        ]
    }

    /// Parses a comma-separated list such as `A.1, C.2`, refusing an empty
    /// list and duplicates.
    pub fn parse_list(list: &str) -> Result<Vec<Scenario>, ScenarioListError> {
        let mut scenarios: Vec<Scenario> = Vec::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let scenario: Scenario = item.parse()?;
            if scenarios.contains(&scenario) {
                return Err(ScenarioListError::Twice(scenario));
            }
            scenarios.push(scenario);
        }
        if scenarios.is_empty() {
            return Err(ScenarioListError::Empty);
        }
        Ok(scenarios)
    }
}

/// (first core index, core count) of every node.
fn node_ranges(cores_per_node: &[usize]) -> impl Iterator<Item = (usize, usize)> + '_ {
    cores_per_node.iter().scan(0usize, |next, &count| {
        let first = *next;
        *next += count;
        Some((first, count))
    })
}

/// The groups D moves the load between: the nodes, or on one node its two
/// halves (one group if the node has one core).
fn alternation_groups(cores_per_node: &[usize]) -> Vec<Vec<usize>> {
    let ranges: Vec<(usize, usize)> = node_ranges(cores_per_node).filter(|(_, n)| *n > 0).collect();
    match ranges.as_slice() {
        [] => vec![Vec::new()],
        [(first, count)] if *count > 1 => {
            let split = first + count.div_ceil(2);
            vec![(*first..split).collect(), (split..first + count).collect()]
        }
        _ => ranges
            .iter()
            .map(|&(first, count)| (first..first + count).collect())
            .collect(),
    }
}

/// From `start_s` on, these core indices carry the load.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadPhase {
    pub start_s: f64,
    pub cores: Vec<usize>,
}

impl LoadPhase {
    fn new(start_s: f64, cores: Vec<usize>) -> Self {
        LoadPhase { start_s, cores }
    }
}

/// The load over time: phases sorted by start, the first at 0.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadSchedule {
    phases: Vec<LoadPhase>,
}

impl LoadSchedule {
    pub fn phases(&self) -> &[LoadPhase] {
        &self.phases
    }

    /// True when no phase loads any core.
    pub fn is_idle(&self) -> bool {
        self.phases.iter().all(|p| p.cores.is_empty())
    }

    /// One line per phase, e.g. `from 0.0 s: cores 0-6,14-20` (`cores`
    /// names core indices as CPU-list syntax).
    pub fn describe(&self) -> String {
        let phases: Vec<String> = self
            .phases
            .iter()
            .map(|p| {
                let cores = if p.cores.is_empty() {
                    "none".to_string()
                } else {
                    format!(
                        "cores {}",
                        pinlearn_topology::CpuSet::from_iter(p.cores.iter().copied())
                    )
                };
                format!("from {:.1} s: {cores}", p.start_s)
            })
            .collect();
        phases.join("; ")
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let load = match self.load {
            Load::None => "1",
            Load::Constant => "2",
            Load::Late => "3",
            Load::Alternating if self.level == Level::Medium => return f.write_str("D"),
            Load::Alternating => "D",
        };
        write!(f, "{}.{load}", self.level.letter())
    }
}

impl Serialize for Scenario {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl FromStr for Scenario {
    type Err = ScenarioError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let name = text.trim().to_ascii_uppercase();
        let bad = || ScenarioError(text.trim().to_string());
        if name == "D" {
            return Ok(Scenario {
                level: Level::Medium,
                load: Load::Alternating,
            });
        }
        let (level, load) = name.split_once('.').ok_or_else(bad)?;
        let level = match level {
            "A" => Level::Small,
            "B" => Level::Medium,
            "C" => Level::Large,
            _ => return Err(bad()),
        };
        let load = match load {
            "1" => Load::None,
            "2" => Load::Constant,
            "3" => Load::Late,
            "D" => Load::Alternating,
            _ => return Err(bad()),
        };
        Ok(Scenario { level, load })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(name: &str) -> Scenario {
        name.parse().expect(name)
    }

    #[test]
    fn names_parse_and_print_back() {
        for name in [
            "A.1", "A.2", "A.3", "B.1", "B.2", "B.3", "C.1", "C.2", "C.3", "D", "A.D", "C.D",
        ] {
            assert_eq!(s(name).to_string(), name);
        }
        assert_eq!(s("b.d").to_string(), "D");
        assert_eq!(
            s(" c.2 "),
            Scenario {
                level: Level::Large,
                load: Load::Constant
            }
        );
        assert_eq!(Scenario::full_matrix().len(), 10);
        assert_eq!(
            Scenario::full_matrix().last().map(ToString::to_string).as_deref(),
            Some("D")
        );
    }

    #[test]
    fn bad_names_give_one_clear_line() {
        for bad in ["", "E.1", "A.4", "A", "A.", "A1", "B2", "1.A", "A.1.2"] {
            let err = bad.parse::<Scenario>().expect_err(bad).to_string();
            assert!(
                err.starts_with(&format!("unknown scenario \"{}\"", bad.trim())),
                "{err}"
            );
            assert!(!err.contains('\n'));
        }
        assert_eq!(Scenario::parse_list("C.1,C.1"), Err(ScenarioListError::Twice(s("C.1"))));
        assert_eq!(Scenario::parse_list(" , "), Err(ScenarioListError::Empty));
        assert_eq!(
            Scenario::parse_list("A.1,X.9"),
            Err(ScenarioListError::Unknown(ScenarioError("X.9".into())))
        );
        assert_eq!(Scenario::parse_list("C.1, A.3, d").expect("valid").len(), 3);
    }

    #[test]
    fn threads_and_cores_follow_the_level() {
        assert_eq!(s("A.1").threads_for(2), 8);
        assert_eq!(s("B.2").threads_for(2), 4);
        assert_eq!(s("C.3").threads_for(16), 16);
        assert_eq!(s("C.1").threads_for(0), 1);
        assert_eq!(s("A.1").cores_for(40, 28), 10);
        assert_eq!(s("B.1").cores_for(40, 28), 20);
        assert_eq!(s("C.1").cores_for(40, 28), 28, "capped at the machine");
        assert_eq!(s("A.1").cores_for(1, 28), 1);
    }

    #[test]
    fn half_the_cores_is_the_first_half_of_every_node_rounded_up() {
        let cores =
            |name: &str, per_node: &[usize]| s(name).load_schedule(per_node, 30.0, 300.0).phases[0].cores.clone();
        assert_eq!(cores("C.2", &[2]), vec![0]);
        assert_eq!(cores("C.2", &[3]), vec![0, 1]);
        assert_eq!(cores("C.2", &[1]), vec![0]);
        assert_eq!(cores("A.2", &[3, 2]), vec![0, 1, 3]);
        assert_eq!(cores("A.1", &[3, 2]), Vec::<usize>::new());
        assert!(s("A.1").load_schedule(&[3, 2], 30.0, 300.0).is_idle());
    }

    #[test]
    fn late_load_starts_at_a_third_and_stays() {
        let schedule = s("B.3").load_schedule(&[4], 30.0, 300.0);
        assert_eq!(
            schedule.phases(),
            &[LoadPhase::new(0.0, vec![]), LoadPhase::new(10.0, vec![0, 1])]
        );
        assert!(s("C.3").load_changes() && s("D").load_changes() && !s("C.2").load_changes());
    }

    #[test]
    fn alternating_load_moves_between_nodes_or_halves() {
        let nodes = s("D").load_schedule(&[3, 2], 30.0, 50.0);
        let cores: Vec<Vec<usize>> = nodes.phases().iter().map(|p| p.cores.clone()).collect();
        assert_eq!(cores[..3], [vec![0, 1, 2], vec![3, 4], vec![0, 1, 2]]);
        assert_eq!(nodes.phases()[1].start_s, 10.0);
        assert_eq!(nodes.phases().last().map(|p| p.start_s), Some(50.0));
        let halves = s("C.D").load_schedule(&[2], 3.0, 3.0);
        let cores: Vec<Vec<usize>> = halves.phases().iter().map(|p| p.cores.clone()).collect();
        assert_eq!(cores, [vec![0], vec![1], vec![0], vec![1]]);
        let one_core = s("A.D").load_schedule(&[1], 3.0, 3.0);
        assert!(one_core.phases().iter().all(|p| p.cores == [0]));
    }

    #[test]
    fn exchangeable_cores_share_node_and_load() {
        assert_eq!(s("C.1").exchangeable_cores(&[4]), vec![vec![0, 1, 2, 3]]);
        assert_eq!(s("C.2").exchangeable_cores(&[4]), vec![vec![0, 1], vec![2, 3]]);
        assert_eq!(s("C.3").exchangeable_cores(&[1]), vec![vec![0]]);
        assert_eq!(s("D").exchangeable_cores(&[2]), vec![vec![0], vec![1]]);
        assert_eq!(
            s("C.1").exchangeable_cores(&[2, 2]),
            vec![vec![0, 1], vec![2, 3]],
            "nodes are not exchangeable"
        );
    }

    #[test]
    fn schedules_describe_themselves() {
        let text = s("D").load_schedule(&[2], 3.0, 2.0).describe();
        assert_eq!(text, "from 0.0 s: cores 0; from 1.0 s: cores 1; from 2.0 s: cores 0");
    }
}
