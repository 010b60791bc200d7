//! The schedulers an experiment compares, one grammar for the real machine
//! (`pinlearn bench`) and the modelled one (`pinlearn sim`).
//!
//! ```text
//!   "learn:balanced:0.04@heartbeat"
//!      │ split at '@' ─► Metric::from_str        (the engine's word for a speed signal)
//!      │ split at ':' ─► PolicyChoice::from_str  (the engine's word: os | static | learn | bubbles)
//!      │                 or "best-static"
//!      │                 Objective::from_str     (the policy's word: mean | balanced[:G] | own)
//!      ▼
//!   Scheduler { kind: Policy(Learn), objective, metric }
//!      ├─ bench: run_options() ─► pinlearn run --policy learn --objective balanced:0.04 --metric heartbeat
//!      └─ sim:   the same policy built in process against the simulated machine
//! ```
//!
//! Grammar: `os | static | learn[:OBJECTIVE] | bubbles | bubbles+learn | best-static`, each but
//! best-static with an optional `@METRIC`; `bound` (paper 001's word for
//! thread i pinned on place i) is read as `static` and shown as `static`. `best-static` is the best fixed
//! per-thread pinning: the bench finds it by trying the distinct ones, the
//! simulator by solving its load model.

use std::fmt;

use pinlearn_engine::{Metric, PolicyChoice};
use pinlearn_policy::Objective;

/// Who decides where the threads run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SchedulerKind {
    /// A policy of the engine (`pinlearn run --policy`).
    Policy(PolicyChoice),
    /// The best fixed pinning, found by the experiment.
    BestStatic,
}

/// A scheduler with its options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scheduler {
    pub kind: SchedulerKind,
    /// learn only: the objective instead of the settings' one.
    pub objective: Option<Objective>,
    /// The speed signal instead of the settings' one.
    pub metric: Option<Metric>,
}

/// A scheduler or scheduler list that cannot be used; one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SchedulerError {
    #[error(
        "scheduler \"{text}\": {why}; use os, static (or bound), learn, learn:OBJECTIVE (mean, balanced[:GAMMA], own), bubbles, bubbles+learn or best-static, each but best-static with an optional @METRIC (auto, useful, instructions, cpu, heartbeat, io)"
    )]
    Invalid { text: String, why: String },
    #[error("scheduler {0} is listed twice")]
    Twice(String),
    #[error("the scheduler list is empty: give names such as os,learn")]
    Empty,
}

impl Scheduler {
    pub const fn policy(choice: PolicyChoice) -> Self {
        Scheduler {
            kind: SchedulerKind::Policy(choice),
            objective: None,
            metric: None,
        }
    }

    pub const BEST_STATIC: Scheduler = Scheduler {
        kind: SchedulerKind::BestStatic,
        objective: None,
        metric: None,
    };

    /// Parses one scheduler (see the module doc for the grammar).
    pub fn parse(text: &str) -> Result<Self, SchedulerError> {
        let text = text.trim();
        let invalid = |why: String| SchedulerError::Invalid {
            text: text.to_string(),
            why,
        };
        let (base, metric) = match text.split_once('@') {
            Some((base, metric)) => {
                let metric: Metric = metric.trim().parse().map_err(|e| invalid(format!("{e}")))?;
                (base.trim(), Some(metric))
            }
            None => (text, None),
        };
        let (name, objective) = match base.split_once(':') {
            Some((name, objective)) => (name, Some(objective)),
            None => (base, None),
        };
        let kind = match name {
            "best-static" => SchedulerKind::BestStatic,
            // The bubbles paper's name for the hand-made pinning, thread i on
            // place i: static is exactly that.
            "bound" => SchedulerKind::Policy(PolicyChoice::Static),
            other => SchedulerKind::Policy(
                other
                    .parse()
                    .map_err(|_| invalid(format!("unknown scheduler \"{other}\"")))?,
            ),
        };
        if kind == SchedulerKind::BestStatic && metric.is_some() {
            return Err(invalid(
                "best-static runs without a manager, so it takes no metric".into(),
            ));
        }
        let objective = match objective {
            None => None,
            Some(_) if kind != SchedulerKind::Policy(PolicyChoice::Learn) => {
                return Err(invalid("only learn takes an objective".into()));
            }
            Some(objective) => Some(objective.parse::<Objective>().map_err(|e| invalid(e.to_string()))?),
        };
        Ok(Scheduler {
            kind,
            objective,
            metric,
        })
    }

    /// Parses a comma-separated list, refusing an empty list and duplicates.
    pub fn parse_list(list: &str) -> Result<Vec<Scheduler>, SchedulerError> {
        let mut schedulers: Vec<Scheduler> = Vec::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let scheduler = Scheduler::parse(item)?;
            if schedulers.iter().any(|s| s.to_string() == scheduler.to_string()) {
                return Err(SchedulerError::Twice(scheduler.to_string()));
            }
            schedulers.push(scheduler);
        }
        if schedulers.is_empty() {
            return Err(SchedulerError::Empty);
        }
        Ok(schedulers)
    }

    /// The `pinlearn run` options selecting this scheduler (empty for best-static).
    pub fn run_options(&self) -> Vec<String> {
        let SchedulerKind::Policy(policy) = self.kind else {
            return Vec::new();
        };
        let mut options = vec!["--policy".to_string(), policy.to_string()];
        if let Some(objective) = self.objective {
            options.extend(["--objective".to_string(), objective.to_string()]);
        }
        if let Some(metric) = self.metric {
            options.extend(["--metric".to_string(), metric.to_string()]);
        }
        options
    }

    /// True for `os` without options: the baseline every table compares with.
    pub fn is_os(&self) -> bool {
        *self == Scheduler::policy(PolicyChoice::Os)
    }
}

impl fmt::Display for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            SchedulerKind::BestStatic => f.write_str("best-static")?,
            SchedulerKind::Policy(policy) => write!(f, "{policy}")?,
        }
        if let Some(objective) = self.objective {
            write!(f, ":{objective}")?;
        }
        if let Some(metric) = self.metric {
            write!(f, "@{metric}")?;
        }
        Ok(())
    }
}

/// The order of the runs of one cell: for each repeat, every scheduler
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
            "bubbles",
            "os@heartbeat",
            "best-static",
        ] {
            let scheduler = Scheduler::parse(text).expect(text);
            assert_eq!(scheduler.to_string(), text);
        }
    }

    #[test]
    fn bound_is_the_papers_word_for_static() {
        assert_eq!(Scheduler::parse("bound"), Scheduler::parse("static"));
        assert_eq!(Scheduler::parse("bound@cpu").expect("valid").to_string(), "static@cpu");
        assert_eq!(
            Scheduler::parse_list("static,bound"),
            Err(SchedulerError::Twice("static".into()))
        );
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
        assert!(Scheduler::BEST_STATIC.run_options().is_empty());
        assert!(Scheduler::parse("os").expect("valid").is_os());
        assert!(!Scheduler::parse("os@heartbeat").expect("valid").is_os());
    }

    #[test]
    fn bad_schedulers_say_why_in_one_line() {
        for (text, needle) in [
            ("linux", "unknown scheduler \"linux\""),
            ("fastest", "unknown scheduler"),
            ("static:mean", "only learn"),
            ("learn:fast", "fast"),
            ("learn:best", "unknown objective"),
            ("learn@cycles", "cycles"),
            ("best-static@cpu", "no metric"),
            ("best-static:mean", "only learn"),
        ] {
            let err = Scheduler::parse(text).expect_err(text).to_string();
            assert!(err.contains(needle), "{text}: {err}");
            assert!(!err.contains('\n'));
        }
        assert_eq!(
            Scheduler::parse_list("os,learn,os"),
            Err(SchedulerError::Twice("os".into()))
        );
        assert_eq!(Scheduler::parse_list(""), Err(SchedulerError::Empty));
        assert_eq!(Scheduler::parse_list("os, learn:own").expect("valid").len(), 2);
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
