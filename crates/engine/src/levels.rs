//! The nested description of what is optimised at which level (paper 002
//! §4: RESOURCES, OPT_CRITERIA, EST / OPT methods, CHILD_RESOURCES), read
//! from `[[levels]]` in the configuration file and mapped onto the engine.
//!
//! ```text
//!   [[levels]] numa_bandwidth  (al | fixed)          ─► learn.numa_level
//!       [[levels.children]] cpu_bandwidth (rl | os)  ─► learn.core_level
//!   [[levels]] cpu_bandwidth   (rl | os)             ─► one level: no NUMA learning
//!   [[levels]] numa_memory     (share, share = Z)    ─► memory_binding = Z
//! ```
//!
//! The default is the papers' two-level scheme: aspiration learning picks
//! the node, learning automata pick the core inside it, memory stays where
//! the threads put it. Every combination that is not implemented is an
//! error naming the supported values, never silently ignored.

use serde::{Deserialize, Serialize};

/// What a level assigns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resource {
    /// The NUMA node a thread runs on.
    NumaBandwidth,
    /// The core a thread runs on (inside its node, when under a NUMA level).
    CpuBandwidth,
    /// The node a process's memory lives on.
    NumaMemory,
}

/// How a level estimates or optimises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Reinforcement learning: running averages of measured speeds
    /// (estimation) or perturbed learning automata (optimisation).
    Rl,
    /// Aspiration learning (optimisation of the node).
    Al,
    /// Keep the round-robin assignment.
    Fixed,
    /// Leave the choice to the operating system inside the parent place.
    Os,
    /// Move memory where a share of the threads runs (`share`).
    Share,
}

/// What a level maximises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Criterion {
    /// The per-thread speed of the chosen `metric`, combined by the objective.
    ProcessingSpeed,
}

/// One level of the description.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Level {
    pub resource: Resource,
    #[serde(default = "processing_speed")]
    pub criterion: Criterion,
    #[serde(default = "rl")]
    pub estimate: Method,
    pub optimize: Method,
    /// The share of a process's threads that pulls its memory (`numa_memory` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Level>,
}

fn processing_speed() -> Criterion {
    Criterion::ProcessingSpeed
}

fn rl() -> Method {
    Method::Rl
}

/// What a description switches on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelPlan {
    pub numa_level: bool,
    pub core_level: bool,
    pub memory_binding: Option<f64>,
}

/// The papers' two-level scheme.
pub fn two_level() -> Vec<Level> {
    vec![Level {
        resource: Resource::NumaBandwidth,
        criterion: Criterion::ProcessingSpeed,
        estimate: Method::Rl,
        optimize: Method::Al,
        share: None,
        children: vec![Level {
            resource: Resource::CpuBandwidth,
            criterion: Criterion::ProcessingSpeed,
            estimate: Method::Rl,
            optimize: Method::Rl,
            share: None,
            children: Vec::new(),
        }],
    }]
}

fn method_name(m: Method) -> &'static str {
    match m {
        Method::Rl => "rl",
        Method::Al => "al",
        Method::Fixed => "fixed",
        Method::Os => "os",
        Method::Share => "share",
    }
}

fn cpu_level(level: &Level, under: &str) -> Result<bool, String> {
    if !level.children.is_empty() {
        return Err(format!(
            "levels: cpu_bandwidth{under} cannot have children (cores are the finest level)"
        ));
    }
    if level.estimate != Method::Rl {
        return Err(format!(
            "levels: cpu_bandwidth estimate = \"{}\" is not supported: use \"rl\"",
            method_name(level.estimate)
        ));
    }
    match level.optimize {
        Method::Rl => Ok(true),
        Method::Os => Ok(false),
        other => Err(format!(
            "levels: cpu_bandwidth optimize = \"{}\" is not supported: use \"rl\" or \"os\"",
            method_name(other)
        )),
    }
}

/// Checks a description and says what it switches on.
pub fn plan(levels: &[Level]) -> Result<LevelPlan, String> {
    let mut plan = LevelPlan {
        numa_level: false,
        core_level: true,
        memory_binding: None,
    };
    let (mut numa, mut cpu, mut memory) = (0, 0, 0);
    for level in levels {
        match level.resource {
            Resource::NumaBandwidth => {
                numa += 1;
                if level.estimate != Method::Rl {
                    return Err(format!(
                        "levels: numa_bandwidth estimate = \"{}\" is not supported: use \"rl\"",
                        method_name(level.estimate)
                    ));
                }
                plan.numa_level = match level.optimize {
                    Method::Al => true,
                    Method::Fixed => false,
                    other => {
                        return Err(format!(
                            "levels: numa_bandwidth optimize = \"{}\" is not supported: use \"al\" or \"fixed\"",
                            method_name(other)
                        ));
                    }
                };
                match level.children.as_slice() {
                    [] => plan.core_level = false,
                    [child] if child.resource == Resource::CpuBandwidth => {
                        plan.core_level = cpu_level(child, " under numa_bandwidth")?;
                    }
                    _ => return Err("levels: numa_bandwidth takes one child, a cpu_bandwidth level".into()),
                }
            }
            Resource::CpuBandwidth => {
                cpu += 1;
                plan.core_level = cpu_level(level, "")?;
            }
            Resource::NumaMemory => {
                memory += 1;
                if !level.children.is_empty() {
                    return Err("levels: numa_memory cannot have children".into());
                }
                match (level.optimize, level.share) {
                    (Method::Share, Some(share)) if (0.0..=1.0).contains(&share) => plan.memory_binding = Some(share),
                    (Method::Share, Some(share)) => {
                        return Err(format!(
                            "levels: numa_memory share = {share} is out of range: use 0 to 1"
                        ));
                    }
                    (Method::Share, None) => return Err("levels: numa_memory needs share = ZETA (0 to 1)".into()),
                    (other, _) => {
                        return Err(format!(
                            "levels: numa_memory optimize = \"{}\" is not supported: use \"share\" with share = ZETA",
                            method_name(other)
                        ));
                    }
                }
            }
        }
    }
    if numa > 1 || memory > 1 || cpu > 1 || (numa == 1 && cpu == 1) {
        return Err(
            "levels: give each resource once (a cpu_bandwidth level goes under numa_bandwidth when both are used)"
                .into(),
        );
    }
    if numa + cpu == 0 {
        return Err("levels: describe where threads run: a numa_bandwidth or a cpu_bandwidth level".into());
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<LevelPlan, String> {
        #[derive(Deserialize)]
        struct File {
            levels: Vec<Level>,
        }
        let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
        plan(&file.levels)
    }

    #[test]
    fn the_default_is_the_two_level_scheme() {
        assert_eq!(
            plan(&two_level()),
            Ok(LevelPlan {
                numa_level: true,
                core_level: true,
                memory_binding: None
            })
        );
    }

    #[test]
    fn paper_002_style_descriptions_map_onto_the_engine() {
        let text = r#"
            [[levels]]
            resource = "numa_bandwidth"
            criterion = "processing_speed"
            estimate = "rl"
            optimize = "al"
            [[levels.children]]
            resource = "cpu_bandwidth"
            optimize = "os"
            [[levels]]
            resource = "numa_memory"
            optimize = "share"
            share = 0.5
        "#;
        assert_eq!(
            parse(text),
            Ok(LevelPlan {
                numa_level: true,
                core_level: false,
                memory_binding: Some(0.5)
            })
        );
        let one_level = "[[levels]]\nresource = \"cpu_bandwidth\"\noptimize = \"rl\"\n";
        assert_eq!(
            parse(one_level),
            Ok(LevelPlan {
                numa_level: false,
                core_level: true,
                memory_binding: None
            })
        );
    }

    #[test]
    fn unsupported_combinations_are_errors_naming_what_works() {
        for (text, needle) in [
            (
                "[[levels]]\nresource = \"cpu_bandwidth\"\noptimize = \"al\"\n",
                "use \"rl\" or \"os\"",
            ),
            (
                "[[levels]]\nresource = \"numa_bandwidth\"\noptimize = \"rl\"\n",
                "use \"al\" or \"fixed\"",
            ),
            (
                "[[levels]]\nresource = \"numa_memory\"\noptimize = \"share\"\n",
                "needs share",
            ),
            (
                "[[levels]]\nresource = \"numa_memory\"\noptimize = \"share\"\nshare = 2.0\n",
                "out of range",
            ),
            ("[[levels]]\nresource = \"gpu\"\noptimize = \"rl\"\n", "gpu"),
            (
                "[[levels]]\nresource = \"cpu_bandwidth\"\noptimize = \"rl\"\n[[levels]]\nresource = \"cpu_bandwidth\"\noptimize = \"rl\"\n",
                "once",
            ),
            (
                "[[levels]]\nresource = \"numa_memory\"\noptimize = \"share\"\nshare = 0.5\n",
                "where threads run",
            ),
        ] {
            let err = parse(text).expect_err(text);
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }
}
