//! The schedulers a bench compares, and how each becomes a command line.
//!
//! ```text
//!   "learn:balanced:0.04@heartbeat" ─► Scheduler::Managed { policy learn, objective, metric }
//!        └► pinlearn run --policy learn --objective balanced:0.04 --metric heartbeat --json ... -- WORKLOAD
//!   "best-static" ─► Scheduler::BestStatic ─► pinlearn work ... with every worker thread pinned
//!                                             by the bench (see best_static.rs)
//! ```
//!
//! Grammar: `os | static | learn[:OBJECTIVE] | best-static`, and `@METRIC`
//! after any but best-static. OBJECTIVE is `mean`, `balanced[:GAMMA]` or
//! `own`; METRIC is `auto`, `instructions`, `cpu` or `heartbeat` (the speed
//! signal pinlearn measures, and learns from under `learn`).

use crate::BenchError;
use pinlearn_engine::{Metric, PolicyChoice};
use pinlearn_policy::Objective;
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum Scheduler {
    /// A `pinlearn run` policy, with its options.
    Managed {
        policy: PolicyChoice,
        objective: Option<Objective>,
        metric: Option<Metric>,
    },
    /// The best fixed per-thread pinning, found by trying them.
    BestStatic,
}

impl Scheduler {
    /// Parses one scheduler (see the module doc for the grammar).
    pub fn parse(text: &str) -> Result<Self, BenchError> {
        let text = text.trim();
        let bad = |why: String| {
            BenchError::BadInput(format!(
                "scheduler {text:?}: {why}; use os, static, learn, learn:OBJECTIVE or best-static, optionally with @METRIC"
            ))
        };
        let (base, metric) = match text.split_once('@') {
            Some((base, metric)) => {
                let metric: Metric = metric
                    .trim()
                    .parse()
                    .map_err(|e: pinlearn_engine::EngineError| bad(e.to_string()))?;
                (base.trim(), Some(metric))
            }
            None => (text, None),
        };
        let (name, objective) = match base.split_once(':') {
            Some((name, objective)) => (name, Some(objective)),
            None => (base, None),
        };
        let policy = match name {
            "best-static" if metric.is_some() => {
                return Err(bad("best-static runs without a manager, so it takes no metric".into()));
            }
            "best-static" if objective.is_some() => return Err(bad("best-static takes no objective".into())),
            "best-static" => return Ok(Scheduler::BestStatic),
            "os" => PolicyChoice::Os,
            "static" => PolicyChoice::Static,
            "learn" => PolicyChoice::Learn,
            other => return Err(bad(format!("unknown scheduler {other:?}"))),
        };
        let objective = match objective {
            Some(_) if policy != PolicyChoice::Learn => return Err(bad("only learn takes an objective".into())),
            Some(objective) => Some(objective.parse::<Objective>().map_err(|e| bad(e.to_string()))?),
            None => None,
        };
        Ok(Scheduler::Managed {
            policy,
            objective,
            metric,
        })
    }

    /// The `pinlearn run` options selecting this scheduler (empty for best-static).
    pub fn run_options(&self) -> Vec<String> {
        match self {
            Scheduler::BestStatic => Vec::new(),
            Scheduler::Managed {
                policy,
                objective,
                metric,
            } => {
                let mut options = vec!["--policy".to_string(), policy.to_string()];
                if let Some(objective) = objective {
                    options.extend(["--objective".to_string(), objective.to_string()]);
                }
                if let Some(metric) = metric {
                    options.extend(["--metric".to_string(), metric.to_string()]);
                }
                options
            }
        }
    }

    /// True for `os` without options: the baseline of the "vs os" column.
    pub fn is_os(&self) -> bool {
        matches!(
            self,
            Scheduler::Managed {
                policy: PolicyChoice::Os,
                metric: None,
                ..
            }
        )
    }
}

impl fmt::Display for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scheduler::BestStatic => f.write_str("best-static"),
            Scheduler::Managed {
                policy,
                objective,
                metric,
            } => {
                write!(f, "{policy}")?;
                if let Some(objective) = objective {
                    write!(f, ":{objective}")?;
                }
                if let Some(metric) = metric {
                    write!(f, "@{metric}")?;
                }
                Ok(())
            }
        }
    }
}

/// Parses a comma-separated list, rejecting duplicates.
pub fn parse_list(list: &str) -> Result<Vec<Scheduler>, BenchError> {
    let mut schedulers: Vec<Scheduler> = Vec::new();
    for item in list.split(',').filter(|s| !s.trim().is_empty()) {
        let scheduler = Scheduler::parse(item)?;
        if schedulers.iter().any(|s| s.to_string() == scheduler.to_string()) {
            return Err(BenchError::BadInput(format!("scheduler {scheduler} is listed twice")));
        }
        schedulers.push(scheduler);
    }
    if schedulers.is_empty() {
        return Err(BenchError::BadInput(
            "--schedulers is empty: give e.g. os,static,learn".into(),
        ));
    }
    Ok(schedulers)
}

/// The order of the runs of one scenario: for each repeat, every scheduler
/// once, the order rotated by one place per repeat (A B C, B C A, C A B, ...)
/// so that slow drift of the machine and the position right after another
/// scheduler's run hit every scheduler alike. Items are (repeat, scheduler index).
pub fn interleaved(schedulers: usize, repeats: usize) -> Vec<(usize, usize)> {
    (0..repeats)
        .flat_map(|repeat| (0..schedulers).map(move |k| (repeat, (repeat + k) % schedulers)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_parses_and_prints_back() {
        for text in [
            "os",
            "static",
            "learn",
            "learn:mean",
            "learn:own",
            "learn:balanced:0.04",
            "learn@heartbeat",
            "learn:balanced:0.04@cpu",
            "os@heartbeat",
            "best-static",
        ] {
            let scheduler = Scheduler::parse(text).expect(text);
            assert_eq!(scheduler.to_string(), text);
        }
    }

    #[test]
    fn run_options_select_policy_objective_and_metric() {
        let options = Scheduler::parse("learn:balanced:0.04@heartbeat")
            .expect("valid")
            .run_options();
        assert_eq!(
            options,
            [
                "--policy",
                "learn",
                "--objective",
                "balanced:0.04",
                "--metric",
                "heartbeat"
            ]
        );
        assert_eq!(Scheduler::parse("os").expect("valid").run_options(), ["--policy", "os"]);
        assert!(Scheduler::BestStatic.run_options().is_empty());
        assert!(Scheduler::parse("os").expect("valid").is_os());
        assert!(!Scheduler::parse("os@heartbeat").expect("valid").is_os());
    }

    #[test]
    fn bad_schedulers_are_bad_input_with_the_reason() {
        for (text, needle) in [
            ("linux", "unknown scheduler"),
            ("static:mean", "only learn"),
            ("learn:fast", "fast"),
            ("learn@cycles", "cycles"),
            ("best-static@cpu", "no metric"),
            ("best-static:mean", "no objective"),
        ] {
            let err = Scheduler::parse(text).expect_err(text);
            assert!(matches!(err, BenchError::BadInput(_)));
            assert!(err.to_string().contains(needle), "{text}: {err}");
        }
        assert!(parse_list("os,learn,os").is_err());
        assert!(parse_list("").is_err());
        assert_eq!(parse_list("os, learn:own").expect("valid").len(), 2);
    }

    #[test]
    fn interleaving_rotates_the_order_every_repeat() {
        assert_eq!(
            interleaved(3, 4),
            vec![
                (0, 0),
                (0, 1),
                (0, 2),
                (1, 1),
                (1, 2),
                (1, 0),
                (2, 2),
                (2, 0),
                (2, 1),
                (3, 0),
                (3, 1),
                (3, 2)
            ]
        );
        // Every scheduler runs once per repeat, and each is first equally often
        // over a whole rotation.
        let order = interleaved(4, 8);
        for repeat in 0..8 {
            let mut seen: Vec<usize> = order.iter().filter(|(r, _)| *r == repeat).map(|(_, s)| *s).collect();
            seen.sort_unstable();
            assert_eq!(seen, vec![0, 1, 2, 3]);
        }
        let firsts: Vec<usize> = order.chunks(4).map(|c| c[0].1).collect();
        assert_eq!(firsts, vec![0, 1, 2, 3, 0, 1, 2, 3]);
        assert!(interleaved(0, 3).is_empty());
    }
}
