//! The learning policy's configuration, as the engine reads it from a TOML
//! file (or builds it from defaults and flags) and hands it over:
//!
//! ```text
//!   objective = "balanced:0.5"     →  LearnConfig::objective
//!   reset_on_exit = false          →  LearnConfig::reset_on_exit
//!   moves = "crowd"                →  LearnConfig::moves
//!   [crowd] margin = 0.15 ...      →  LearnConfig::crowd (CrowdConfig)
//!   [pla]  step = 0.1 ...          →  LearnConfig::pla   (PlaConfig)
//!   [numa] eta = 1.25 ...          →  LearnConfig::numa  (AspirationConfig)
//!   [guard] window = 6 ...         →  LearnConfig::guard (GuardConfig)
//!            │
//!            └─► validate() ─► Ok, or ConfigError listing every bad key
//! ```
//!
//! Every field has a default and unknown keys are rejected, so a typo fails
//! loudly instead of silently using the default.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::aspiration::AspirationConfig;
use crate::crowd::CrowdConfig;
use crate::guard::GuardConfig;
use crate::objective::Objective;
use crate::pla::PlaConfig;

/// Where a new thread's automaton starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Start {
    /// On the thread's round-robin core (papers 000, 003; the default: the
    /// do-no-harm guard leaves the threads to Linux until this start has
    /// measured better).
    #[default]
    RoundRobin,
    /// On the thread's whole node: the OS balances until learning pins.
    Os,
}

/// How a thread's core is chosen from one period to the next.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Moves {
    /// Its automaton draws a place every period (the papers).
    Drawn,
    /// A thread moves only where the run shares all threads measured say
    /// it gains (`crate::crowd`; the default).
    #[default]
    Crowd,
}

/// Everything the learning policy can be tuned with.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LearnConfig {
    /// What the core-level learners maximise.
    pub objective: Objective,
    /// How threads change cores: the automata's draws (the papers), or
    /// crowd-directed moves.
    pub moves: Moves,
    /// Crowd-directed moves (`moves = "crowd"`).
    pub crowd: CrowdConfig,
    /// Core-level perturbed learning automata.
    pub pla: PlaConfig,
    /// NUMA-level aspiration learning.
    pub numa: AspirationConfig,
    /// The do-no-harm guard: compares the learner with the OS while running.
    pub guard: GuardConfig,
    /// Re-assign every thread round-robin when one ends (paper 003 §3.1).
    pub reset_on_exit: bool,
    /// Where a new thread's automaton starts: on its round-robin core (the
    /// papers), or on its whole node, where the OS balances (learning then
    /// pins only what measures better).
    pub start: Start,
    /// Besides the cores of its node, a thread's automaton may choose the
    /// whole node (the OS balances inside it): pinlearn's addition, which
    /// lets a thread leave a crowded core without a pin. `false`: the cores
    /// only, as in the papers (needs `start = "round-robin"`).
    pub node_action: bool,
    /// Learn the NUMA node (aspiration learning) on machines with 2+ nodes;
    /// off: threads keep their round-robin node. Not a file key: the
    /// engine's `[[levels]]` description sets it.
    #[serde(skip)]
    pub numa_level: bool,
    /// Learn the core inside the node (perturbed learning automata); off:
    /// every thread gets its whole node and the OS balances inside it.
    /// Set by the engine's `[[levels]]` description.
    #[serde(skip)]
    pub core_level: bool,
}

impl Default for LearnConfig {
    fn default() -> Self {
        LearnConfig {
            // `own`, not the papers' O1: with run shares (the metric where
            // counters are missing) the mean is the same for every assignment
            // that keeps the cores busy, so it gives the learner nothing to
            // go on (docs/design.md, docs/simulator.md).
            objective: Objective::Own,
            // Crowd moves, not the papers' draws: at the papers' scale the
            // draws move a few of 40 threads every period, each a straggler
            // at the next barrier (docs/simulator.md, "Crowd moves become
            // the default").
            moves: Moves::Crowd,
            crowd: CrowdConfig::default(),
            pla: PlaConfig::default(),
            numa: AspirationConfig::default(),
            guard: GuardConfig::default(),
            // Crowd moves fill the core a thread leaves; a reset would take
            // every thread away from its memory.
            reset_on_exit: false,
            start: Start::RoundRobin,
            node_action: true,
            numa_level: true,
            core_level: true,
        }
    }
}

/// One out-of-range setting.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigProblem {
    /// The key as written in the file, e.g. `pla.step`.
    pub key: &'static str,
    /// The value as written (a number, or `false`).
    pub value: String,
    /// The allowed range, e.g. `in (0, 1]`.
    pub allowed: &'static str,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} = {} is out of range: it must be {}",
            self.key, self.value, self.allowed
        )
    }
}

/// The learning configuration has settings out of range: every problem,
/// on one line, separated by "; " (afl found the newline-separated form
/// breaking the one-line rule of errors).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}", render(.problems))]
pub struct ConfigError {
    pub problems: Vec<ConfigProblem>,
}

fn render(problems: &[ConfigProblem]) -> String {
    problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

impl LearnConfig {
    /// Checks every numeric setting and reports all problems at once.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let open_closed = |v: f64| v > 0.0 && v <= 1.0;
        let closed = |v: f64| (0.0..=1.0).contains(&v);
        let checks: [(&'static str, f64, bool, &'static str); 27] = [
            (
                "crowd.margin",
                self.crowd.margin,
                self.crowd.margin >= 0.0 && self.crowd.margin.is_finite(),
                "a finite number >= 0",
            ),
            (
                "crowd.forget_s",
                self.crowd.forget_s,
                self.crowd.forget_s > 0.0 && self.crowd.forget_s.is_finite(),
                "a finite number of seconds > 0",
            ),
            (
                "crowd.wake_share",
                self.crowd.wake_share,
                closed(self.crowd.wake_share),
                "in [0, 1]",
            ),
            (
                "crowd.catch_up_s",
                self.crowd.catch_up_s,
                self.crowd.catch_up_s >= 0.0 && self.crowd.catch_up_s.is_finite(),
                "a finite number of seconds >= 0",
            ),
            ("pla.step", self.pla.step, open_closed(self.pla.step), "in (0, 1]"),
            (
                "pla.lambda",
                self.pla.lambda,
                (0.0..1.0).contains(&self.pla.lambda),
                "in [0, 1)",
            ),
            ("pla.nu", self.pla.nu, open_closed(self.pla.nu), "in (0, 1]"),
            (
                "pla.threshold",
                self.pla.threshold,
                (0.0..=1.5).contains(&self.pla.threshold),
                "in [0, 1.5]",
            ),
            (
                "pla.init_focus",
                self.pla.init_focus,
                closed(self.pla.init_focus),
                "in [0, 1]",
            ),
            ("numa.nu", self.numa.nu, open_closed(self.numa.nu), "in (0, 1]"),
            (
                "numa.eta",
                self.numa.eta,
                self.numa.eta > 1.0 && self.numa.eta.is_finite(),
                "a finite number > 1",
            ),
            (
                "numa.gamma",
                self.numa.gamma,
                self.numa.gamma > 0.0 && self.numa.gamma < 1.0,
                "in (0, 1)",
            ),
            ("numa.zeta", self.numa.zeta, closed(self.numa.zeta), "in [0, 1]"),
            (
                "numa.period_s",
                self.numa.period_s,
                self.numa.period_s > 0.0 && self.numa.period_s.is_finite(),
                "a finite number of seconds > 0",
            ),
            (
                "guard.settle",
                f64::from(self.guard.settle),
                self.guard.settle >= 1,
                "an integer >= 1 (periods)",
            ),
            (
                "guard.window",
                f64::from(self.guard.window),
                self.guard.window >= 2 && self.guard.window > self.guard.settle,
                "an integer >= 2 (periods), more than guard.settle",
            ),
            (
                "guard.margin",
                self.guard.margin,
                (0.0..1.0).contains(&self.guard.margin),
                "in [0, 1)",
            ),
            (
                "guard.probe_cost",
                self.guard.probe_cost,
                self.guard.probe_cost > 0.0 && self.guard.probe_cost < 1.0,
                "in (0, 1)",
            ),
            (
                "guard.assumed_loss",
                self.guard.assumed_loss,
                closed(self.guard.assumed_loss),
                "in [0, 1]",
            ),
            (
                "guard.decisive",
                self.guard.decisive,
                self.guard.decisive >= self.guard.margin && self.guard.decisive.is_finite(),
                ">= guard.margin",
            ),
            (
                "guard.replay_change",
                self.guard.replay_change,
                self.guard.replay_change >= 0.0 && self.guard.replay_change.is_finite(),
                ">= 0",
            ),
            (
                "guard.savings",
                self.guard.savings,
                self.guard.savings >= 0.0 && self.guard.savings.is_finite(),
                ">= 0",
            ),
            (
                "guard.blind_waiting",
                self.guard.blind_waiting,
                closed(self.guard.blind_waiting),
                "in [0, 1]",
            ),
            (
                "guard.blind_queued",
                self.guard.blind_queued,
                closed(self.guard.blind_queued),
                "in [0, 1]",
            ),
            (
                "guard.remote_gap",
                self.guard.remote_gap,
                self.guard.remote_gap > 0.0 && self.guard.remote_gap <= 1.0,
                "in (0, 1]",
            ),
            (
                "guard.max_gap",
                f64::from(self.guard.max_gap),
                self.guard.max_gap >= 1,
                "an integer >= 1 (windows)",
            ),
            (
                "objective",
                match self.objective {
                    Objective::Balanced { gamma } => gamma,
                    _ => 0.0,
                },
                match self.objective {
                    Objective::Balanced { gamma } => gamma.is_finite() && gamma >= 0.0,
                    _ => true,
                },
                "balanced:GAMMA with GAMMA a finite number >= 0",
            ),
        ];
        let mut problems: Vec<ConfigProblem> = checks
            .into_iter()
            .filter(|&(_, _, ok, _)| !ok)
            .map(|(key, value, _, allowed)| ConfigProblem {
                key,
                value: value.to_string(),
                allowed,
            })
            .collect();
        if !self.node_action && self.start == Start::Os {
            problems.push(ConfigProblem {
                key: "node_action",
                value: "false".to_string(),
                allowed: "true with start = \"os\" (such a thread starts on its whole node)",
            });
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError { problems })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_move_threads_by_the_crowd() {
        let cfg = LearnConfig::default();
        assert_eq!(cfg.validate(), Ok(()));
        assert!(!cfg.reset_on_exit);
        assert_eq!(cfg.moves, Moves::Crowd);
        assert_eq!(cfg.objective, Objective::Own, "own, not O1: see the comment in Default");
        assert_eq!(cfg.pla.lambda, 0.02);
        assert_eq!(cfg.numa.gamma, 0.9);
        assert_eq!(cfg.numa.period_s, 2.0);
    }

    #[test]
    fn toml_sections_fill_the_struct_and_the_rest_defaults() {
        let cfg: LearnConfig = toml::from_str(
            "objective = \"balanced:0.5\"\nreset_on_exit = true\n[pla]\nstep = 0.1\n[numa]\neta = 1.5\n",
        )
        .unwrap();
        assert_eq!(cfg.objective, Objective::Balanced { gamma: 0.5 });
        assert!(cfg.reset_on_exit);
        assert_eq!(
            cfg.pla,
            PlaConfig {
                step: 0.1,
                ..PlaConfig::default()
            }
        );
        assert_eq!(
            cfg.numa,
            AspirationConfig {
                eta: 1.5,
                ..AspirationConfig::default()
            }
        );
        assert_eq!(toml::from_str::<LearnConfig>("").unwrap(), LearnConfig::default());
        // and back
        let text = toml::to_string(&cfg).unwrap();
        assert_eq!(toml::from_str::<LearnConfig>(&text).unwrap(), cfg);
    }

    #[test]
    fn unknown_keys_and_objectives_are_rejected() {
        let err = toml::from_str::<LearnConfig>("[pla]\nstpe = 0.1\n").unwrap_err();
        assert!(err.to_string().contains("stpe"), "{err}");
        let err = toml::from_str::<LearnConfig>("objective = \"fast\"\n").unwrap_err();
        assert!(err.to_string().contains("unknown objective \"fast\""), "{err}");
        assert!(toml::from_str::<LearnConfig>("[numa]\nperiod = 3.0\n").is_err());
    }

    fn problem_keys(cfg: &LearnConfig) -> Vec<&'static str> {
        cfg.validate()
            .err()
            .map(|e| e.problems.iter().map(|p| p.key).collect())
            .unwrap_or_default()
    }

    #[test]
    fn each_bad_setting_is_named_with_its_range() {
        let base = LearnConfig::default();
        let cases: Vec<(LearnConfig, &str)> = vec![
            (
                LearnConfig {
                    pla: PlaConfig { step: 0.0, ..base.pla },
                    ..base
                },
                "pla.step",
            ),
            (
                LearnConfig {
                    pla: PlaConfig { step: 1.5, ..base.pla },
                    ..base
                },
                "pla.step",
            ),
            (
                LearnConfig {
                    pla: PlaConfig {
                        lambda: 1.0,
                        ..base.pla
                    },
                    ..base
                },
                "pla.lambda",
            ),
            (
                LearnConfig {
                    pla: PlaConfig {
                        lambda: -0.1,
                        ..base.pla
                    },
                    ..base
                },
                "pla.lambda",
            ),
            (
                LearnConfig {
                    pla: PlaConfig {
                        nu: f64::NAN,
                        ..base.pla
                    },
                    ..base
                },
                "pla.nu",
            ),
            (
                LearnConfig {
                    pla: PlaConfig {
                        threshold: 1.6,
                        ..base.pla
                    },
                    ..base
                },
                "pla.threshold",
            ),
            (
                LearnConfig {
                    pla: PlaConfig {
                        threshold: -0.1,
                        ..base.pla
                    },
                    ..base
                },
                "pla.threshold",
            ),
            (
                LearnConfig {
                    pla: PlaConfig {
                        init_focus: 1.1,
                        ..base.pla
                    },
                    ..base
                },
                "pla.init_focus",
            ),
            (
                LearnConfig {
                    numa: AspirationConfig { nu: 0.0, ..base.numa },
                    ..base
                },
                "numa.nu",
            ),
            (
                LearnConfig {
                    numa: AspirationConfig { eta: 0.8, ..base.numa },
                    ..base
                },
                "numa.eta",
            ),
            (
                LearnConfig {
                    numa: AspirationConfig { eta: 1.0, ..base.numa },
                    ..base
                },
                "numa.eta",
            ),
            (
                LearnConfig {
                    numa: AspirationConfig {
                        gamma: 1.0,
                        ..base.numa
                    },
                    ..base
                },
                "numa.gamma",
            ),
            (
                LearnConfig {
                    numa: AspirationConfig {
                        zeta: -0.5,
                        ..base.numa
                    },
                    ..base
                },
                "numa.zeta",
            ),
            (
                LearnConfig {
                    numa: AspirationConfig {
                        period_s: 0.0,
                        ..base.numa
                    },
                    ..base
                },
                "numa.period_s",
            ),
            (
                LearnConfig {
                    objective: Objective::Balanced { gamma: -1.0 },
                    ..base
                },
                "objective",
            ),
            (
                LearnConfig {
                    guard: GuardConfig {
                        assumed_loss: 1.5,
                        ..base.guard
                    },
                    ..base
                },
                "guard.assumed_loss",
            ),
            (
                LearnConfig {
                    guard: GuardConfig {
                        settle: 0,
                        ..base.guard
                    },
                    ..base
                },
                "guard.settle",
            ),
            (
                LearnConfig {
                    guard: GuardConfig {
                        window: 3,
                        settle: 3,
                        ..base.guard
                    },
                    ..base
                },
                "guard.window",
            ),
            (
                LearnConfig {
                    guard: GuardConfig {
                        remote_gap: 0.0,
                        ..base.guard
                    },
                    ..base
                },
                "guard.remote_gap",
            ),
            (
                LearnConfig {
                    node_action: false,
                    start: Start::Os,
                    ..base
                },
                "node_action",
            ),
        ];
        for (cfg, key) in cases {
            assert_eq!(problem_keys(&cfg), vec![key]);
        }
        // edges that are allowed
        let edges = LearnConfig {
            pla: PlaConfig {
                step: 1.0,
                lambda: 0.0,
                nu: 1.0,
                threshold: 1.5,
                init_focus: 0.0,
            },
            numa: AspirationConfig {
                nu: 1.0,
                zeta: 1.0,
                ..base.numa
            },
            ..base
        };
        assert_eq!(edges.validate(), Ok(()));
    }

    #[test]
    fn all_problems_are_reported_one_per_line() {
        let cfg = LearnConfig {
            pla: PlaConfig {
                step: 2.0,
                ..PlaConfig::default()
            },
            numa: AspirationConfig {
                eta: 0.8,
                ..AspirationConfig::default()
            },
            ..LearnConfig::default()
        };
        let err = cfg.validate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "pla.step = 2 is out of range: it must be in (0, 1]; \
             numa.eta = 0.8 is out of range: it must be a finite number > 1"
        );
    }
}
