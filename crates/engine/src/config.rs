//! Every tunable of a pinlearn run, from defaults, a TOML file and flags.
//!
//! ```text
//!   Settings::default() ──► Settings::from_toml_file(--config) ──► CLI flags override
//!                                                               └─► validate() ──► engine
//! ```
//!
//! The file holds the engine's own keys at the top level and the learning
//! algorithm's under `[learn]`, `[learn.pla]` and `[learn.numa]`:
//!
//! ```toml
//! interval = "50ms"        # T_CPU
//! metric = "auto"          # auto | useful | instructions | cpu | heartbeat | io
//! policy = "learn"         # learn | static | os
//! seed = 1
//! children = true          # also supervise descendant processes
//! follow_program_affinity = true  # a thread whose program changes its mask is left alone
//! manager_priority = "realtime"   # realtime | normal: pinlearn's own periods come on time
//! manager_budget = 0.01    # its steps take at most 1% of the CPUs' time (periods stretch)
//! memory_binding = 0.5     # optional: memory follows half of a process's threads
//! remote_cost = 2.1        # optional: how many times slower a thread runs away
//!                          # from its memory (bubbles); default: the machine's
//!                          # NUMA distances, else 2
//! memory_follows = "auto"  # auto | never | a duration: how long a thread works on
//!                          # another node before the kernel's NUMA balancing has
//!                          # brought its memory (auto: 10s where the kernel balances)
//! move_thread_memory = true  # a thread's first-touched pages follow it to the node
//!                          # pinlearn keeps it on (page-fault samples, move_pages)
//! [learn]
//! objective = "balanced:1" # mean | balanced[:GAMMA] | own
//! [learn.pla]
//! step = 0.05
//! [learn.numa]
//! period_s = 2.0           # T_NUMA
//! [sampling]               # the useful metric's CPU-clock samples
//! rate_hz = 250
//! every = 8                # threads switched to often: one core period in 8
//! settled_every = 4        # threads settled in work: one core period in 4
//! [sampling.waiting]       # code whose samples count as waiting
//! libraries = ["libgomp.so*", "libomp.so*", "libiomp5.so*"]
//! symbols = ["libc.so*:pthread_spin_lock", "libopen-pal.so*:opal_progress*"]
//! [[levels]]               # what is optimised where (paper 002 §4), see `levels`
//! resource = "numa_bandwidth"
//! optimize = "al"
//! [[levels.children]]
//! resource = "cpu_bandwidth"
//! optimize = "rl"
//! ```

use crate::EngineError;
use pinlearn_policy::LearnConfig;
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

/// Where per-thread speed comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// Instructions if the kernel counts them, else cpu (said once).
    Auto,
    /// Hardware instructions per second (perf_event_open), the papers' metric.
    Instructions,
    /// Share of runnable time spent running, from schedstat.
    Cpu,
    /// Application-reported progress; silent threads fall back to useful,
    /// else cpu.
    Heartbeat,
    /// Run share times the share of CPU-clock samples outside waiting code
    /// (OpenMP runtimes, spin locks, MPI progress loops): no hardware
    /// counters needed.
    Useful,
    /// Bytes read and written per second (/proc/PID/task/TID/io), relative
    /// to the recent peak: for streaming programs.
    Io,
}

/// The scheduling priority of pinlearn's own manager thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ManagerPriority {
    /// SCHED_FIFO at the lowest real-time priority while the manager takes
    /// short steps (never inherited by what it starts): its periods come
    /// on time even with hundreds of runnable threads per CPU. Where the
    /// kernel refuses it, normal priority (said only if periods ran late).
    Realtime,
    /// The priority pinlearn was started with.
    Normal,
}

/// Which policy decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyChoice {
    /// Perturbed learning automata (+ aspiration learning on NUMA machines).
    Learn,
    /// Round-robin pinning once.
    Static,
    /// Measure only, never pin: the baseline.
    Os,
    /// Spread the bubbles of `--bubbles` (or every thread alone) over the
    /// topology tree (paper 001).
    Bubbles,
    /// As `Bubbles`, and inside the place each thread gets, crowd moves
    /// choose its core from the run shares (`bubbles+learn`).
    #[serde(rename = "bubbles+learn")]
    BubblesLearn,
}

impl PolicyChoice {
    /// The policy places bubbles (reads `--bubbles` and declared bubbles).
    pub fn places_bubbles(self) -> bool {
        matches!(self, PolicyChoice::Bubbles | PolicyChoice::BubblesLearn)
    }
}

macro_rules! word_enum {
    ($ty:ident, $what:literal, $( $word:literal => $variant:ident ),+) => {
        impl FromStr for $ty {
            type Err = EngineError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $( $word => Ok($ty::$variant), )+
                    _ => Err(EngineError::bad_input(format!(
                        concat!("unknown ", $what, " {:?}: use one of {}"),
                        s,
                        [$($word),+].join(", ")
                    ))),
                }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(match self { $( $ty::$variant => $word, )+ })
            }
        }
    };
}
word_enum!(Metric, "metric", "auto" => Auto, "instructions" => Instructions, "cpu" => Cpu, "heartbeat" => Heartbeat, "useful" => Useful, "io" => Io);
word_enum!(PolicyChoice, "policy", "learn" => Learn, "static" => Static, "os" => Os, "bubbles" => Bubbles, "bubbles+learn" => BubblesLearn);

/// All settings of one run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// The core-level period T_CPU.
    #[serde(deserialize_with = "duration_from_str", serialize_with = "duration_to_str")]
    pub interval: Duration,
    pub metric: Metric,
    pub policy: PolicyChoice,
    pub seed: u64,
    /// Supervise the target's descendant processes too.
    pub children: bool,
    /// A thread whose mask changes during the run by someone else than
    /// pinlearn (its own program, an MPI launcher, taskset) is left alone
    /// from then on, with one note; `false`: pinlearn keeps placing it.
    pub follow_program_affinity: bool,
    /// The manager thread's own scheduling priority.
    pub manager_priority: ManagerPriority,
    /// The most of the allowed CPUs' time the manager's steps may take, in
    /// (0, 1]: where its steps cost more (thousands of threads on a few
    /// CPUs), its period stretches, up to 20 times `interval`.
    pub manager_budget: f64,
    /// Move a process's memory to the node where this share of its threads
    /// runs (paper 002 §5.2's zeta, in [0, 1]); off when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_binding: Option<f64>,
    /// How many times slower a thread runs away from its memory, as the
    /// bubbles spread assumes it (a thread leaves its node only from a node
    /// with that many threads per CPU); absent: the machine's NUMA
    /// distances ([`Settings::remote_cost_on`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_cost: Option<f64>,
    /// Whether, and how soon, a thread's memory follows it to another node
    /// (the kernel's automatic NUMA balancing), as the learner's NUMA level
    /// assumes it ([`Settings::memory_follows_on`]).
    pub memory_follows: MemoryFollows,
    /// Move the memory a thread first touched to the node pinlearn placed
    /// it on, once it has stayed there a NUMA period (`learn.numa.period_s`).
    pub move_thread_memory: bool,
    /// What is optimised at which level (paper 002 §4); the two-level
    /// scheme by default. Sets `learn`'s levels and `memory_binding`.
    pub levels: Vec<crate::levels::Level>,
    pub learn: LearnConfig,
    /// CPU-clock sampling for the `useful` metric.
    pub sampling: Sampling,
}

/// How threads are sampled and which code counts as waiting (`[sampling]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Sampling {
    /// Samples per second of a thread's CPU time (one every 1/rate s of CPU).
    pub rate_hz: u32,
    /// Threads are sampled during one core period in every `every` (1:
    /// always): a sampled thread pays a timer on each switch to it and an
    /// interrupt per sample, which in a virtual machine slowed a program
    /// that sleeps and wakes at every barrier by 40% when always on.
    pub every: u32,
    /// A thread rarely switched whose recent samples all fell in working
    /// code is sampled during one core period in `settled_every`, its event
    /// paused (not closed) in between: each sample is a timer interrupt
    /// (an exit to the hypervisor in a virtual machine), which cost a
    /// computing program about 1% at 250 Hz. A waiting sample brings it back
    /// to every period. 1: every period.
    pub settled_every: u32,
    /// Which code counts as waiting (`[sampling.waiting]`).
    pub waiting: crate::live::WaitingRules,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            rate_hz: 250,
            every: 8,
            settled_every: 4,
            waiting: crate::live::WaitingRules::default(),
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            interval: Duration::from_millis(50),
            metric: Metric::Auto,
            policy: PolicyChoice::Learn,
            seed: 1,
            children: true,
            follow_program_affinity: true,
            manager_priority: ManagerPriority::Realtime,
            manager_budget: 0.01,
            memory_binding: None,
            remote_cost: None,
            memory_follows: MemoryFollows::Auto,
            move_thread_memory: true,
            levels: crate::levels::two_level(),
            learn: LearnConfig::default(),
            sampling: Sampling::default(),
        }
    }
}

impl Settings {
    /// Reads a TOML file; unknown keys and bad values are errors naming the file.
    pub fn from_toml_file(path: &Path) -> Result<Self, EngineError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| EngineError::bad_input(format!("cannot read config file {}: {e}", path.display())))?;
        Self::from_toml_str(&text).map_err(|e| EngineError::bad_input(format!("config file {}: {e}", path.display())))
    }

    /// Parses TOML text (errors as one line, without the file name).
    pub fn from_toml_str(text: &str) -> Result<Self, EngineError> {
        let mut settings: Settings = toml::from_str(text).map_err(|e| {
            // One line whatever the file holds (messages may quote it).
            let message = e
                .message()
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .collect::<Vec<_>>()
                .join("; ");
            let line = e.span().map(|s| text[..s.start].lines().count().max(1));
            EngineError::bad_input(match line {
                Some(line) => format!("line {line}: {message}"),
                None => message,
            })
        })?;
        let plan = crate::levels::plan(&settings.levels).map_err(EngineError::bad_input)?;
        settings.learn.numa_level = plan.numa_level;
        settings.learn.core_level = plan.core_level;
        if plan.memory_binding.is_some() {
            settings.memory_binding = plan.memory_binding;
        }
        settings.validate()?;
        Ok(settings)
    }

    /// Checks ranges the types cannot express.
    pub fn validate(&self) -> Result<(), EngineError> {
        if self.interval < Duration::from_millis(1) || self.interval > Duration::from_secs(3600) {
            return Err(EngineError::bad_input(format!(
                "interval {} is out of range: use 1ms to 1h",
                format_duration(self.interval)
            )));
        }
        if !(self.manager_budget > 0.0 && self.manager_budget <= 1.0) {
            return Err(EngineError::bad_input(format!(
                "manager_budget {} is out of range: use a share of the CPUs' time above 0, at most 1",
                self.manager_budget
            )));
        }
        if let Some(zeta) = self.memory_binding
            && !(0.0..=1.0).contains(&zeta)
        {
            return Err(EngineError::bad_input(format!(
                "memory binding share {zeta} is out of range: use 0 to 1"
            )));
        }
        if let Some(cost) = self.remote_cost
            && !(1.0..=pinlearn_topology::MAX_REMOTE_RATIO).contains(&cost)
        {
            return Err(EngineError::bad_input(format!(
                "remote_cost {cost} is out of range: use 1 (remote memory costs nothing) to {}",
                pinlearn_topology::MAX_REMOTE_RATIO
            )));
        }
        if !(1..=100_000).contains(&self.sampling.rate_hz) {
            return Err(EngineError::bad_input(format!(
                "sampling rate_hz {} is out of range: use 1 to 100000",
                self.sampling.rate_hz
            )));
        }
        for (key, periods) in [
            ("every", self.sampling.every),
            ("settled_every", self.sampling.settled_every),
        ] {
            if !(1..=1000).contains(&periods) {
                return Err(EngineError::bad_input(format!(
                    "sampling {key} {periods} is out of range: use 1 (every period) to 1000"
                )));
            }
        }
        self.sampling.waiting.compile().map_err(EngineError::bad_input)?;
        self.learn.validate().map_err(|e| EngineError::bad_input(e.to_string()))
    }

    /// These settings as a TOML configuration file.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("settings serialise to TOML")
    }

    /// `--policy bubbles` (`learning`: `bubbles+learn`) over `places` with
    /// these settings: the guard, the crowd moves and the remote cost. One
    /// constructor for live runs and the simulator.
    pub fn bubbles_policy(&self, places: &crate::places::Places, learning: bool) -> pinlearn_policy::BubblesPolicy {
        let layout = places.layout.clone();
        let policy = if learning {
            pinlearn_policy::BubblesPolicy::with_learning(layout, places.tree(), self.learn.guard, self.learn.crowd)
        } else {
            pinlearn_policy::BubblesPolicy::new(layout, places.tree(), self.learn.guard)
        };
        policy.assuming_remote_cost(self.remote_cost_on(places))
    }

    /// `--policy learn` over `places` with the learner's configuration
    /// `learn` and `seed`, and the remote cost its NUMA level weighs from
    /// these settings. One constructor for live runs and the simulator.
    pub fn learn_policy(
        &self,
        places: &crate::places::Places,
        learn: pinlearn_policy::LearnConfig,
        seed: u64,
    ) -> pinlearn_policy::LearnPolicy {
        pinlearn_policy::LearnPolicy::new(places.layout.clone(), learn, seed)
            .assuming_remote_cost(self.remote_cost_on(places))
            .assuming_memory_follows(self.memory_follows_on(places))
    }

    /// Seconds of work on another node after which the learner's NUMA level
    /// takes a thread's memory to be there too: the setting's duration, none
    /// with `never`, and with `auto` the kernel's delay where the places say
    /// it balances memory ([`crate::places::Places::kernel_moves_memory`]),
    /// else [`THREAD_MEMORY_FOLLOWS_PERIODS`] NUMA periods where pinlearn
    /// moves it ([`crate::places::Places::memory_moves_with_threads`]).
    pub fn memory_follows_on(&self, places: &crate::places::Places) -> Option<f64> {
        match self.memory_follows {
            MemoryFollows::Never => None,
            MemoryFollows::After(after) => Some(after.as_secs_f64()),
            MemoryFollows::Auto => places.kernel_moves_memory.map(|after| after.as_secs_f64()).or(places
                .memory_moves_with_threads
                .then_some(THREAD_MEMORY_FOLLOWS_PERIODS * self.learn.numa.period_s)),
        }
    }

    /// The remote cost the bubbles policy and the learner's NUMA level
    /// assume on these places: the settings' `remote_cost`, else the
    /// machine's NUMA distances (remote over local), else
    /// [`pinlearn_policy::DEFAULT_REMOTE_COST`].
    fn remote_cost_on(&self, places: &crate::places::Places) -> f64 {
        self.remote_cost
            .or(places.remote_ratio)
            .unwrap_or(pinlearn_policy::DEFAULT_REMOTE_COST)
    }

    /// Number of core periods per NUMA period (at least 1).
    pub fn numa_every(&self) -> u64 {
        let ratio = self.learn.numa.period_s / self.interval.as_secs_f64();
        (ratio.round() as u64).max(1)
    }
}

/// NUMA periods of work on another node after which the learner takes a
/// thread's memory to be there where pinlearn moves it: the engine moves
/// it after one period on the node; the second covers the copy and a stay
/// cut short by the next NUMA tick (sim, 160 cells: regret 0.9831 with the
/// memory moved but crossings priced as if it stayed, 0.9762 with this).
pub const THREAD_MEMORY_FOLLOWS_PERIODS: f64 = 2.0;

/// How long a live session assumes the kernel takes to bring a thread's
/// memory after it where it balances memory (`memory_follows = "auto"`):
/// ten of its scans at their fastest period (1 s); the simulator's
/// `--numa-balancing 10s` models a program whose pages follow that fast.
pub const DEFAULT_MEMORY_FOLLOWS: Duration = Duration::from_secs(10);

/// Whether a thread's memory follows it to another node (`memory_follows`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryFollows {
    /// As the machine does: [`DEFAULT_MEMORY_FOLLOWS`] where the kernel
    /// balances memory (`kernel.numa_balancing`), never where it does not.
    Auto,
    /// Memory stays where it was first touched.
    Never,
    /// After this much work on the other node.
    After(Duration),
}

impl FromStr for MemoryFollows {
    type Err = EngineError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "auto" => Ok(MemoryFollows::Auto),
            "never" => Ok(MemoryFollows::Never),
            other => {
                let after = parse_duration(other).map_err(|_| {
                    EngineError::bad_input(format!(
                        "memory_follows {other:?} is not auto, never or a duration such as 10s"
                    ))
                })?;
                if after.is_zero() || after > Duration::from_secs(3600) {
                    return Err(EngineError::bad_input(format!(
                        "memory_follows {other} is out of range: use a duration above 0, at most 1h (or never)"
                    )));
                }
                Ok(MemoryFollows::After(after))
            }
        }
    }
}

impl fmt::Display for MemoryFollows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryFollows::Auto => f.write_str("auto"),
            MemoryFollows::Never => f.write_str("never"),
            MemoryFollows::After(after) => f.write_str(&format_duration(*after)),
        }
    }
}

impl<'de> Deserialize<'de> for MemoryFollows {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl Serialize for MemoryFollows {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

/// Parses the one duration syntax of pinlearn: a number with a unit, such
/// as `50ms`, `5s`, `1.5s` or `2m`, or several such terms (`1m30s`, `1m 30s`).
/// Units: `ns`, `us` (or `µs`), `ms`, `s`, `m` (or `min`), `h`. A number
/// without a unit is refused: `50` could mean seconds or milliseconds.
pub fn parse_duration(text: &str) -> Result<Duration, EngineError> {
    let bad = |why: &str| {
        EngineError::bad_input(format!(
            "invalid duration {text:?}: {why}; write a number and a unit, such as 50ms, 5s, 1.5s or 2m"
        ))
    };
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(bad("it is empty"));
    }
    // Exact integer arithmetic in nanoseconds: what is written is what is read.
    let mut total_ns: u128 = 0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        if number.is_empty() {
            return Err(bad("a number is missing"));
        }
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(bad(&format!("{number:?} is not a number")));
        }
        let after = after.trim_start();
        let unit_len = after.find(|c: char| !c.is_alphabetic()).unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let unit_ns: u128 = match unit {
            "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" | "min" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => return Err(bad("the unit is missing")),
            other => return Err(bad(&format!("unknown unit {other:?}"))),
        };
        let out_of_range = || bad("it is out of range");
        let whole_value: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| out_of_range())?
        };
        // Digits past the 18th are below a millionth of a nanosecond here.
        let fraction = &fraction[..fraction.len().min(18)];
        let fraction_value: u128 = if fraction.is_empty() {
            0
        } else {
            fraction.parse().expect("digits")
        };
        let denominator = 10u128.pow(fraction.len() as u32);
        let fraction_ns = (2 * fraction_value * unit_ns + denominator) / (2 * denominator); // rounded
        total_ns = whole_value
            .checked_mul(unit_ns)
            .and_then(|ns| ns.checked_add(fraction_ns))
            .and_then(|ns| ns.checked_add(total_ns))
            .ok_or_else(out_of_range)?;
        rest = after.trim_start();
    }
    let seconds = u64::try_from(total_ns / 1_000_000_000).map_err(|_| bad("it is out of range"))?;
    Ok(Duration::new(seconds, (total_ns % 1_000_000_000) as u32))
}

/// A duration in the syntax [`parse_duration`] reads, e.g. `50ms`, `2s`,
/// `1m 30s`, `26h 1m` (hours are the largest unit, so it always reads back).
pub fn format_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    let nanos = u64::from(duration.subsec_nanos());
    let terms = [
        (seconds / 3600, "h"),
        (seconds / 60 % 60, "m"),
        (seconds % 60, "s"),
        (nanos / 1_000_000, "ms"),
        (nanos / 1_000 % 1_000, "us"),
        (nanos % 1_000, "ns"),
    ];
    let text: Vec<String> = terms
        .iter()
        .filter(|(value, _)| *value > 0)
        .map(|(value, unit)| format!("{value}{unit}"))
        .collect();
    if text.is_empty() {
        "0s".to_string()
    } else {
        text.join(" ")
    }
}

fn duration_from_str<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(d)?;
    parse_duration(&text).map_err(serde::de::Error::custom)
}

fn duration_to_str<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_duration(*d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_documented_ones() {
        let s = Settings::default();
        assert_eq!(s.interval, Duration::from_millis(50));
        assert_eq!(s.metric, Metric::Auto);
        assert_eq!(s.policy, PolicyChoice::Learn);
        assert!(s.children);
        s.validate().expect("defaults are valid");
    }

    /// A configuration file of `configs/`, parsed and validated (each
    /// shipped file must be usable as it is).
    fn shipped(name: &str, text: &str) -> Settings {
        let s = Settings::from_toml_str(text).unwrap_or_else(|e| panic!("configs/{name} does not parse: {e}"));
        s.validate()
            .unwrap_or_else(|e| panic!("configs/{name} is not valid: {e}"));
        s
    }

    #[test]
    fn the_shipped_unguarded_learner_file_is_the_default_without_the_guard() {
        let s = shipped(
            "unguarded-learner.toml",
            include_str!("../../../configs/unguarded-learner.toml"),
        );
        assert_eq!(s.learn.start, pinlearn_policy::Start::RoundRobin);
        assert_eq!(s.learn.pla.init_focus, 0.5);
        assert!(!s.learn.guard.enabled);
        assert_eq!(s.learn.moves, pinlearn_policy::Moves::Drawn, "as measured");
        let defaults = Settings::default();
        assert_eq!(s.learn.pla.step, defaults.learn.pla.step, "the rest stays default");
        assert_eq!(s.learn.objective, defaults.learn.objective);
        assert!(s.learn.node_action);
    }

    #[test]
    fn the_shipped_crowd_moves_file_is_the_default_learner() {
        let s = shipped("crowd-moves.toml", include_str!("../../../configs/crowd-moves.toml"));
        assert_eq!(s.learn.moves, pinlearn_policy::Moves::Crowd);
        assert!(!s.learn.reset_on_exit);
        assert_eq!(
            s.learn,
            Settings::default().learn,
            "crowd moves are the default since 2026-11-25"
        );
    }

    #[test]
    fn the_shipped_drawn_moves_file_is_the_default_with_the_automata_s_draws() {
        let s = shipped("drawn-moves.toml", include_str!("../../../configs/drawn-moves.toml"));
        assert_eq!(s.learn.moves, pinlearn_policy::Moves::Drawn);
        assert!(s.learn.reset_on_exit);
        let defaults = Settings::default();
        assert_ne!(s.learn.moves, defaults.learn.moves);
        assert_eq!(s.learn.guard, defaults.learn.guard, "the rest stays default");
        assert_eq!(s.learn.pla, defaults.learn.pla);
        assert_eq!(s.learn.objective, defaults.learn.objective);
    }

    #[test]
    fn the_shipped_forecast_file_ages_the_forecast_always_and_changes_nothing_else() {
        let s = shipped(
            "forecast-halflife-8.toml",
            include_str!("../../../configs/forecast-halflife-8.toml"),
        );
        let guard = s.learn.guard;
        assert_eq!(guard.forecast_halflife, 8);
        assert_eq!(
            guard.forecast_ages,
            pinlearn_policy::ForecastAges::Always,
            "as measured"
        );
        let defaults = Settings::default().learn;
        assert_eq!(
            pinlearn_policy::GuardConfig {
                forecast_halflife: defaults.guard.forecast_halflife,
                forecast_ages: defaults.guard.forecast_ages,
                ..guard
            },
            defaults.guard,
            "the rest stays default"
        );
        assert_eq!(s.learn.moves, defaults.moves);
    }

    #[test]
    fn the_shipped_blind_retry_files_change_only_the_guard_s_second_chance_and_its_forecast() {
        let defaults = Settings::default().learn;
        assert_eq!(defaults.guard.blind_retry_after, 4, "the default since 2026-11-28");
        let off = shipped(
            "blind-retry-off.toml",
            include_str!("../../../configs/blind-retry-off.toml"),
        );
        assert_eq!(
            off.learn.guard,
            pinlearn_policy::GuardConfig {
                blind_retry_after: 0,
                ..defaults.guard
            },
            "the default without the retry"
        );
        let blind = shipped(
            "forecast-blind-4.toml",
            include_str!("../../../configs/forecast-blind-4.toml"),
        );
        assert_eq!(
            blind.learn.guard,
            pinlearn_policy::GuardConfig {
                blind_retry_after: 0,
                forecast_halflife: 4,
                forecast_ages: pinlearn_policy::ForecastAges::WhileLinuxBlind,
                ..defaults.guard
            },
            "as measured: the forecast fades while Linux looks blind, no retry"
        );
        assert_eq!((off.learn.moves, blind.learn.moves), (defaults.moves, defaults.moves));
    }

    #[test]
    fn the_shipped_probe_budget_files_keep_the_first_probe_s_wait() {
        let files = [
            (
                "probe-budget-1.5.toml",
                include_str!("../../../configs/probe-budget-1.5.toml"),
                (0.015, 0.225),
            ),
            (
                "probe-budget-2.toml",
                include_str!("../../../configs/probe-budget-2.toml"),
                (0.02, 0.3),
            ),
        ];
        let defaults = Settings::default().learn.guard;
        assert_eq!(
            (defaults.probe_cost, defaults.assumed_loss),
            (0.015, 0.225),
            "1.5% by default"
        );
        for (name, text, budget) in files {
            let s = shipped(name, text);
            let guard = s.learn.guard;
            assert_eq!((guard.probe_cost, guard.assumed_loss), budget, "{name}");
            assert_eq!(
                (guard.assumed_loss / guard.probe_cost).round(),
                (defaults.assumed_loss / defaults.probe_cost).round(),
                "{name}: the first probe waits as many windows as by default"
            );
            assert_eq!(
                pinlearn_policy::GuardConfig {
                    probe_cost: defaults.probe_cost,
                    assumed_loss: defaults.assumed_loss,
                    ..guard
                },
                defaults,
                "{name}: the rest stays default"
            );
            assert_eq!(s.learn.moves, Settings::default().learn.moves);
        }
    }

    #[test]
    fn the_shipped_papers_learner_file_gives_the_papers_values() {
        let s = shipped(
            "papers-learner.toml",
            include_str!("../../../configs/papers-learner.toml"),
        );
        let learn = &s.learn;
        // Paper 000 Table IV (DESIGN.md §2).
        assert_eq!(s.interval, Duration::from_millis(50));
        assert_eq!(learn.objective, pinlearn_policy::Objective::Own);
        assert_eq!((learn.pla.step, learn.pla.lambda, learn.pla.nu), (0.2, 0.02, 0.01));
        assert_eq!((learn.pla.threshold, learn.pla.init_focus), (0.0, 0.0));
        assert_eq!((learn.numa.nu, learn.numa.eta, learn.numa.gamma), (0.01, 1.25, 0.9));
        assert_eq!((learn.numa.zeta, learn.numa.period_s), (0.02, 2.0));
        assert!(
            !learn.numa.mind_memory,
            "the papers' better replies know nothing of memory"
        );
        assert!(Settings::default().learn.numa.mind_memory);
        assert!(!learn.node_action && !learn.guard.enabled && learn.reset_on_exit);
        assert_eq!(learn.moves, pinlearn_policy::Moves::Drawn);
    }

    #[test]
    fn the_shipped_probe_early_file_is_the_default_without_the_wait() {
        let s = shipped("probe-early.toml", include_str!("../../../configs/probe-early.toml"));
        assert_eq!(
            s.learn.guard.assumed_loss, 0.0,
            "the learner's first probe comes at once"
        );
        let defaults = Settings::default();
        assert_ne!(defaults.learn.guard.assumed_loss, 0.0);
        let with_wait = pinlearn_policy::GuardConfig {
            assumed_loss: defaults.learn.guard.assumed_loss,
            ..s.learn.guard
        };
        assert_eq!(with_wait, defaults.learn.guard, "otherwise the default guard");
        assert_eq!(s.learn.start, defaults.learn.start);
        assert_eq!(s.learn.moves, pinlearn_policy::Moves::Drawn, "as measured");
        assert_eq!(s.learn.pla, defaults.learn.pla);
    }

    #[test]
    fn the_shipped_probes_never_file_leaves_linux_in_charge_for_good() {
        let s = shipped("probes-never.toml", include_str!("../../../configs/probes-never.toml"));
        let defaults = Settings::default();
        assert_eq!(s.learn.moves, defaults.learn.moves);
        assert_eq!(s.learn.pla, defaults.learn.pla);
        assert_eq!(s.learn.objective, defaults.learn.objective);
        let guard = s.learn.guard;
        assert!(guard.enabled && guard.first == pinlearn_policy::Arm::Os);
        assert_eq!(guard.window, defaults.learn.guard.window);
        // Eight hours of 50 ms periods where Linux's every window shows both
        // blind spots at their worst: the learner is never placed.
        let mut guard = pinlearn_policy::Guard::new(guard);
        let blind = pinlearn_policy::Signs {
            waiting: Some(1.0),
            queued: Some(1.0),
            remote: None,
        };
        for period in 0..8 * 3600 * 20 {
            let arm = guard.next(Some(1.0), blind);
            assert_eq!(arm, pinlearn_policy::Arm::Os, "period {period}");
        }
        assert_eq!(guard.stats().os_share(), 1.0);
    }

    #[test]
    fn sampling_keys_out_of_range_are_bad_input() {
        for (text, needle) in [
            ("[sampling]\nrate_hz = 0", "rate_hz 0 is out of range"),
            ("[sampling]\nevery = 0", "every 0 is out of range"),
            ("[sampling]\nsettled_every = 0", "settled_every 0 is out of range"),
            ("[sampling]\nsettled_every = 1001", "settled_every 1001 is out of range"),
        ] {
            let error = Settings::from_toml_str(text).expect_err(text).to_string();
            assert!(error.contains(needle), "{text}: {error}");
        }
        let one = Settings::from_toml_str("[sampling]\nsettled_every = 1").expect("parses");
        assert_eq!(one.sampling.settled_every, 1);
        assert_eq!(Settings::default().sampling.settled_every, 4);
    }

    #[test]
    fn toml_sets_engine_and_learning_keys() {
        let s = Settings::from_toml_str(
            "interval = \"20ms\"\nmetric = \"cpu\"\npolicy = \"static\"\n[learn]\nobjective = \"balanced:0.5\"\n",
        )
        .expect("valid");
        assert_eq!(s.interval, Duration::from_millis(20));
        assert_eq!(s.metric, Metric::Cpu);
        assert_eq!(s.policy, PolicyChoice::Static);
        assert_eq!(s.learn.objective.to_string(), "balanced:0.5");
    }

    #[test]
    fn unknown_keys_and_bad_values_are_one_line_errors() {
        for (text, needle) in [
            ("intervall = \"20ms\"", "intervall"),
            ("interval = \"fast\"", "invalid duration"),
            ("metric = \"cycles\"", "cycles"),
            ("interval = \"0ms\"", "out of range"),
            ("[learn]\nobjective = \"best\"", "best"),
            ("interval = ", "line 1"),
            ("remote_cost = 0.5", "remote_cost 0.5 is out of range"),
            ("remote_cost = nan", "out of range"),
            ("remote_cost = 17.0", "out of range"),
        ] {
            let err = Settings::from_toml_str(text).expect_err(text).to_string();
            assert!(err.contains(needle), "{text:?} gave {err:?}");
            assert!(!err.contains('\n'), "{err:?} spans lines");
        }
    }

    #[test]
    fn the_remote_cost_comes_from_the_settings_then_the_machine_then_the_default() {
        let topology = pinlearn_topology::Topology::from_synthetic("node:2 core:2 pu:1").unwrap();
        let unknown = crate::places::Places::new(&topology);
        let measured = crate::places::Places::new(&topology.with_remote_ratio(Some(2.5)));
        let settings = Settings::default();
        assert_eq!(settings.remote_cost_on(&unknown), pinlearn_policy::DEFAULT_REMOTE_COST);
        assert_eq!(settings.remote_cost_on(&measured), 2.5);
        let set = Settings::from_toml_str("remote_cost = 1.5").unwrap();
        assert_eq!(set.remote_cost_on(&measured), 1.5);
        assert!(set.to_toml().contains("remote_cost = 1.5"), "{}", set.to_toml());
    }

    #[test]
    fn memory_follows_as_the_machine_says_unless_the_settings_say_otherwise() {
        let topology = pinlearn_topology::Topology::from_synthetic("node:2 core:2 pu:1").unwrap();
        let stays = crate::places::Places::new(&topology);
        let mut balanced = stays.clone();
        balanced.kernel_moves_memory = Some(Duration::from_secs(2));
        let auto = Settings::default();
        assert_eq!(auto.memory_follows, MemoryFollows::Auto);
        assert_eq!(auto.memory_follows_on(&stays), None);
        assert_eq!(auto.memory_follows_on(&balanced), Some(2.0));
        let never = Settings::from_toml_str("memory_follows = \"never\"").unwrap();
        assert_eq!(never.memory_follows_on(&balanced), None);
        let after = Settings::from_toml_str("memory_follows = \"30s\"").unwrap();
        assert_eq!(after.memory_follows_on(&stays), Some(30.0));
        assert!(
            after.to_toml().contains("memory_follows = \"30s\""),
            "{}",
            after.to_toml()
        );
        for (text, needle) in [
            (
                "memory_follows = \"soon\"",
                "memory_follows \"soon\" is not auto, never or a duration",
            ),
            ("memory_follows = \"0s\"", "memory_follows 0s is out of range"),
            ("memory_follows = \"2h\"", "memory_follows 2h is out of range"),
            ("memory_follows = 10", "line 1"),
        ] {
            let err = Settings::from_toml_str(text).expect_err(text).to_string();
            assert!(err.contains(needle), "{text:?} gave {err:?}");
            assert!(!err.contains('\n'), "{err:?} spans lines");
        }
    }

    #[test]
    fn the_printed_defaults_read_back_as_the_defaults() {
        let text = Settings::default().to_toml();
        let back = Settings::from_toml_str(&text).expect("round trip");
        assert_eq!(back.to_toml(), text);
        assert!(text.contains("interval = \"50ms\""), "{text}");
        assert!(text.contains("[learn.pla]"), "{text}");
    }

    #[test]
    fn one_duration_syntax() {
        for (text, expected) in [
            ("50ms", Duration::from_millis(50)),
            ("5s", Duration::from_secs(5)),
            ("1.5s", Duration::from_millis(1500)),
            ("2m", Duration::from_secs(120)),
            ("1m30s", Duration::from_secs(90)),
            ("1m 30s", Duration::from_secs(90)),
            ("250us", Duration::from_micros(250)),
            (" 2h ", Duration::from_secs(7200)),
        ] {
            assert_eq!(parse_duration(text).expect(text), expected, "{text}");
        }
        for (text, needle) in [
            ("50", "unit is missing"),
            ("", "empty"),
            ("fast", "number is missing"),
            ("5 parsecs", "unknown unit"),
            ("1.2.3s", "not a number"),
            ("-5s", "number is missing"),
            ("99999999999999999999999h", "out of range"),
        ] {
            let err = parse_duration(text).expect_err(text).to_string();
            assert!(err.contains(needle), "{text:?}: {err}");
            assert!(err.contains("50ms, 5s, 1.5s or 2m"), "{err}");
        }
        for d in [
            Duration::from_millis(50),
            Duration::from_secs(90),
            Duration::from_micros(1500),
        ] {
            assert_eq!(parse_duration(&format_duration(d)).expect("round trip"), d);
        }
    }

    #[test]
    fn numa_period_is_counted_in_core_periods() {
        let mut s = Settings::default();
        s.learn.numa.period_s = 2.0;
        assert_eq!(s.numa_every(), 40);
        s.interval = Duration::from_secs(5);
        assert_eq!(s.numa_every(), 1);
    }
}
