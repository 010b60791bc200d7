//! What the learners maximise: the objective turns the speeds measured over a
//! period into one utility per thread.
//!
//! ```text
//!   speeds[i] (Option<f64>, metric unit) ──sanitise──► known v_i
//!        │   (non-finite → unknown, negative → 0)
//!        ▼
//!   Mean          f = mean_i v_i                         (O1, paper 003)
//!   Balanced{γ}   f = mean_i [v_i − γ (v_i − v̄)²]         (O2, paper 003)
//!        └──► every thread with a known speed gets f (identical interest),
//!             a thread with an unknown speed gets NaN
//!   Own           u_i = v_i                              (paper 000)
//! ```
//!
//! Speeds are in the metric's unit: for the `cpu` metric a speed is a share of
//! a nominal core in [0, 1], for `instructions` it is 1e9 instructions/s. The
//! papers measure 1e8 instructions/s and use γ = 0.02–0.04; since the variance
//! term scales with the square of the unit, `balanced` with γ = 1.0 on cpu
//! shares only *roughly* corresponds to their setting (a share of 1.0 is not a
//! fixed number of instructions), so treat γ as a knob to tune, not a constant
//! carried over from the papers.
//!
//! The objective is written and read as a short string (`mean`, `balanced`,
//! `balanced:0.5`, `own`), both on the command line and in configuration
//! files; [`Objective`]'s `Display`, `FromStr` and serde forms are that string.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The optimisation criterion of the learning policy.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Objective {
    /// O1: the mean speed of all threads, shared by every thread.
    #[default]
    Mean,
    /// O2: the mean speed minus `gamma` times the speed variance, shared by
    /// every thread. `gamma` is finite and non-negative.
    Balanced { gamma: f64 },
    /// Every thread maximises its own speed (paper 000).
    Own,
}

/// Why an objective string was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseObjectiveError {
    #[error("unknown objective \"{0}\": use mean, balanced[:GAMMA] or own")]
    Unknown(String),
    #[error("objective \"{0}\": GAMMA must be a finite number >= 0, e.g. balanced:0.5")]
    BadGamma(String),
}

impl Objective {
    /// The gamma `balanced` takes when none is given.
    pub const DEFAULT_GAMMA: f64 = 1.0;

    /// One utility per entry of `speeds`: the shared objective value for every
    /// thread with a known speed (`Mean`, `Balanced`) or the thread's own
    /// sanitised speed (`Own`); NaN for unknown speeds, and for everyone when
    /// no speed is known.
    pub fn utilities(&self, speeds: &[Option<f64>]) -> Vec<f64> {
        let known = |s: &Option<f64>| sanitise_speed(*s);
        match *self {
            Objective::Own => speeds.iter().map(|s| known(s).unwrap_or(f64::NAN)).collect(),
            Objective::Mean | Objective::Balanced { .. } => {
                let (sum, count) = speeds
                    .iter()
                    .filter_map(known)
                    .fold((0.0, 0usize), |(sum, count), v| (sum + v, count + 1));
                if count == 0 {
                    return vec![f64::NAN; speeds.len()];
                }
                let mean = sum / count as f64;
                let shared = match *self {
                    Objective::Balanced { gamma } => {
                        let penalty: f64 = speeds.iter().filter_map(known).map(|v| (v - mean) * (v - mean)).sum();
                        mean - gamma * penalty / count as f64
                    }
                    _ => mean,
                };
                speeds
                    .iter()
                    .map(|s| if known(s).is_some() { shared } else { f64::NAN })
                    .collect()
            }
        }
    }
}

/// A measured speed as the learners use it: `None` for an unknown or
/// non-finite speed, negative speeds raised to 0.
pub(crate) fn sanitise_speed(speed: Option<f64>) -> Option<f64> {
    speed.filter(|v| v.is_finite()).map(|v| v.max(0.0))
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Objective::Mean => f.write_str("mean"),
            Objective::Balanced { gamma } => write!(f, "balanced:{gamma}"),
            Objective::Own => f.write_str("own"),
        }
    }
}

impl FromStr for Objective {
    type Err = ParseObjectiveError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let trimmed = text.trim();
        let (name, gamma) = match trimmed.split_once(':') {
            Some((name, gamma)) => (name, Some(gamma)),
            None => (trimmed, None),
        };
        match (name.to_ascii_lowercase().as_str(), gamma) {
            ("mean", None) => Ok(Objective::Mean),
            ("own", None) => Ok(Objective::Own),
            ("balanced", None) => Ok(Objective::Balanced {
                gamma: Self::DEFAULT_GAMMA,
            }),
            ("balanced", Some(gamma)) => match gamma.trim().parse::<f64>() {
                Ok(gamma) if gamma.is_finite() && gamma >= 0.0 => Ok(Objective::Balanced { gamma }),
                _ => Err(ParseObjectiveError::BadGamma(text.to_string())),
            },
            _ => Err(ParseObjectiveError::Unknown(text.to_string())),
        }
    }
}

impl Serialize for Objective {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Objective {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(values: &[f64]) -> Vec<Option<f64>> {
        values.iter().copied().map(Some).collect()
    }

    #[test]
    fn parses_every_form_and_round_trips() {
        assert_eq!("mean".parse(), Ok(Objective::Mean));
        assert_eq!("own".parse(), Ok(Objective::Own));
        assert_eq!("balanced".parse(), Ok(Objective::Balanced { gamma: 1.0 }));
        assert_eq!("balanced:0.5".parse(), Ok(Objective::Balanced { gamma: 0.5 }));
        assert_eq!("Balanced:0".parse(), Ok(Objective::Balanced { gamma: 0.0 }));
        for objective in [
            Objective::Mean,
            Objective::Own,
            Objective::Balanced { gamma: 1.0 },
            Objective::Balanced { gamma: 0.035 },
            Objective::Balanced { gamma: 1e-7 },
        ] {
            assert_eq!(objective.to_string().parse::<Objective>(), Ok(objective));
        }
        assert_eq!(Objective::Balanced { gamma: 1.0 }.to_string(), "balanced:1");
    }

    #[test]
    fn rejects_unknown_names_and_bad_gammas_with_a_clear_message() {
        let err = "x".parse::<Objective>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown objective \"x\": use mean, balanced[:GAMMA] or own"
        );
        assert!(matches!(
            "mean:1".parse::<Objective>(),
            Err(ParseObjectiveError::Unknown(_))
        ));
        for bad in [
            "balanced:-1",
            "balanced:nan",
            "balanced:inf",
            "balanced:",
            "balanced:abc",
        ] {
            let err = bad.parse::<Objective>().unwrap_err();
            assert_eq!(err, ParseObjectiveError::BadGamma(bad.to_string()), "{bad}");
            assert!(err.to_string().contains("GAMMA"));
        }
    }

    #[test]
    fn serde_uses_the_string_form() {
        let objective = Objective::Balanced { gamma: 0.5 };
        assert_eq!(serde_json::to_string(&objective).unwrap(), "\"balanced:0.5\"");
        assert_eq!(serde_json::from_str::<Objective>("\"own\"").unwrap(), Objective::Own);
        let err = serde_json::from_str::<Objective>("\"fastest\"").unwrap_err();
        assert!(err.to_string().contains("unknown objective \"fastest\""), "{err}");
    }

    #[test]
    fn mean_gives_everyone_with_a_speed_the_mean() {
        let u = Objective::Mean.utilities(&[Some(1.0), None, Some(0.5), Some(f64::NAN)]);
        assert_eq!(u[0], 0.75);
        assert!(u[1].is_nan());
        assert_eq!(u[2], 0.75);
        assert!(u[3].is_nan(), "a NaN speed is unknown");
    }

    #[test]
    fn negative_speeds_count_as_zero_and_infinite_as_unknown() {
        let u = Objective::Mean.utilities(&[Some(-3.0), Some(1.0), Some(f64::INFINITY)]);
        assert_eq!(u[0], 0.5);
        assert!(u[2].is_nan());
        let own = Objective::Own.utilities(&[Some(-3.0), Some(0.25), None, Some(f64::NEG_INFINITY)]);
        assert_eq!(own[0], 0.0);
        assert_eq!(own[1], 0.25);
        assert!(own[2].is_nan() && own[3].is_nan());
    }

    #[test]
    fn no_known_speed_gives_nan_everywhere() {
        for objective in [Objective::Mean, Objective::Balanced { gamma: 1.0 }, Objective::Own] {
            let u = objective.utilities(&[None, Some(f64::NAN)]);
            assert!(u.iter().all(|v| v.is_nan()), "{objective}");
        }
        assert!(Objective::Mean.utilities(&[]).is_empty());
    }

    #[test]
    fn balanced_ranks_equal_speeds_above_spread_ones_with_the_same_mean() {
        let equal = some(&[0.5, 0.5, 0.5]);
        let spread = some(&[0.25, 0.25, 1.0]);
        let balanced = Objective::Balanced { gamma: 1.0 };
        assert_eq!(balanced.utilities(&equal)[0], 0.5);
        let spread_value = balanced.utilities(&spread)[0];
        // variance = (2 * 0.0625 + 0.25) / 3 = 0.125
        assert!((spread_value - 0.375).abs() < 1e-12, "{spread_value}");
        assert!(balanced.utilities(&equal)[0] > spread_value);
        // O1 cannot tell them apart.
        assert_eq!(
            Objective::Mean.utilities(&equal)[0],
            Objective::Mean.utilities(&spread)[0]
        );
        // gamma = 0 is O1.
        assert_eq!(Objective::Balanced { gamma: 0.0 }.utilities(&spread)[0], 0.5);
    }

    #[test]
    fn own_gives_each_thread_its_speed() {
        assert_eq!(Objective::Own.utilities(&some(&[0.25, 1.0])), vec![0.25, 1.0]);
    }
}
