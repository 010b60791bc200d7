//! What every workload shares: its thread count and seed, named worker
//! threads, and the progress sink.
//!
//! ```text
//!   worker thread i ("aco-3") ──work_done(units)──► heartbeat counter of this thread
//!                                                 └► progress bar (terminal only)
//! ```
//!
//! Workloads call [`Common::work_done`] once per unit of real work (an ant's
//! tour, an option priced, a candidate evaluated), so pinlearn can read the
//! application's progress from outside through the heartbeat channel.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pinlearn_engine::{EngineError, Manager, PolicyChoice, Registration, Request, Settings};
use pinlearn_topology::{CpuSet, Topology, TopologyError};
use std::io::IsTerminal;

/// Why a workload could not run.
#[derive(Debug, thiserror::Error)]
pub enum WorkError {
    #[error("{0}")]
    BadInput(String),
    #[error("could not start worker thread: {0}")]
    Spawn(#[from] std::io::Error),
    #[error("{0}")]
    Affinity(String),
    #[error("the workload computed a wrong result: {0} (a bug in pinlearn-workloads, please report it)")]
    WrongResult(String),
}

/// The settings and progress sink shared by every workload.
pub struct Common {
    pub threads: usize,
    pub seed: u64,
    progress: ProgressBar,
    /// Beat the pinlearn heartbeat channel on finished work.
    heartbeats: bool,
}

impl Common {
    /// `quiet` hides the progress bar; it is also hidden when stdout is not a
    /// terminal.
    pub fn new(threads: usize, seed: u64, quiet: bool) -> Result<Self, WorkError> {
        if threads == 0 {
            return Err(WorkError::BadInput("--threads must be at least 1".into()));
        }
        let progress = if quiet || !std::io::stdout().is_terminal() {
            ProgressBar::hidden()
        } else {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg} [{elapsed_precise}] {wide_bar} {pos}/{len} ({eta})")
                    .expect("static template"),
            );
            bar
        };
        Ok(Common {
            threads,
            seed,
            progress,
            heartbeats: true,
        })
    }

    /// Reports no progress to pinlearn (no heartbeat channel is created):
    /// the workload is then as silent as an unmodified program.
    pub fn without_heartbeats(mut self) -> Self {
        self.heartbeats = false;
        self
    }

    /// Sets the label and the number of work units expected (0 = unknown).
    pub fn start(&self, label: &str, total_units: u64) {
        self.progress.set_message(label.to_string());
        if total_units > 0 {
            self.progress.set_length(total_units);
        }
    }

    /// Records `units` of finished work for the calling thread.
    pub fn work_done(&self, units: u64) {
        if self.heartbeats {
            pinlearn_heartbeat::beat(units);
        }
        self.progress.inc(units);
    }

    /// Clears the progress bar.
    pub fn finish(&self) {
        self.progress.finish_and_clear();
    }

    /// Runs `work(i)` on `threads` scoped threads named `{name}-{i}` and
    /// returns their results in thread order.
    pub fn spawn_workers<T, F>(&self, name: &str, work: F) -> Result<Vec<T>, WorkError>
    where
        T: Send,
        F: Fn(usize) -> T + Sync,
    {
        let names: Vec<String> = (0..self.threads).map(|i| format!("{name}-{i}")).collect();
        self.spawn_named_workers(&names, work)
    }

    /// Runs `work(i)` on one scoped thread per name, thread `i` named
    /// `names[i]` (for workloads whose threads have different roles, like the
    /// stages of a pipeline), and returns their results in that order.
    ///
    /// No thread starts working before all are spawned: if one cannot be
    /// spawned, the others return without working, so threads that would wait
    /// for it (at a barrier, on a queue) cannot hang the run.
    pub fn spawn_named_workers<T, F>(&self, names: &[String], work: F) -> Result<Vec<T>, WorkError>
    where
        T: Send,
        F: Fn(usize) -> T + Sync,
    {
        let work = &work;
        let gate = StartGate::default();
        let gate = &gate;
        std::thread::scope(|scope| {
            let mut handles = Vec::with_capacity(names.len());
            for (i, name) in names.iter().enumerate() {
                let spawned = std::thread::Builder::new()
                    .name(name.clone())
                    .spawn_scoped(scope, move || gate.wait_for_all().then(|| work(i)));
                match spawned {
                    Ok(handle) => handles.push(handle),
                    Err(e) => {
                        gate.open(false);
                        return Err(WorkError::Spawn(e));
                    }
                }
            }
            gate.open(true);
            Ok(handles
                .into_iter()
                .filter_map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                .collect())
        })
    }
}

/// Holds spawned workers until all are spawned (`open(true)`) or one could
/// not be (`open(false)`).
#[derive(Default)]
pub(crate) struct StartGate {
    decision: std::sync::Mutex<Option<bool>>,
    decided: std::sync::Condvar,
}

impl StartGate {
    pub(crate) fn open(&self, go: bool) {
        *self.decision.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(go);
        self.decided.notify_all();
    }

    /// Waits for the decision; `true` means work.
    pub(crate) fn wait_for_all(&self) -> bool {
        let decision = self.decision.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let decision = self
            .decided
            .wait_while(decision, |decision| decision.is_none())
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        decision.unwrap_or(false)
    }
}

/// How the threads of a workload that places its own (`heat`, `fib`) are
/// placed: the `--mode` of paper 001's experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// No placement: the OS (or pinlearn from outside) decides.
    #[default]
    Simple,
    /// Worker i (heat's stripe i, fib's leaf i) pins itself to the i-th CPU
    /// it may run on, wrapping around: the hand-made binding.
    Bound,
    /// The workload's bubbles, placed by pinlearn inside this process.
    Bubbles,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Simple => "simple",
            Mode::Bound => "bound",
            Mode::Bubbles => "bubbles",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "simple" => Ok(Mode::Simple),
            "bound" => Ok(Mode::Bound),
            "bubbles" => Ok(Mode::Bubbles),
            other => Err(format!(
                "unknown mode \"{other}\": use simple (the OS places the threads), bound (worker i pinned to the i-th CPU) or bubbles (the workload's bubbles, placed by pinlearn in this process)"
            )),
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Pins the calling thread to `cpu` (`--mode bound`).
pub(crate) fn pin_to(cpu: usize) -> Result<(), WorkError> {
    let pin = || -> nix::Result<()> {
        let mut set = nix::sched::CpuSet::new();
        set.set(cpu)?;
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
    };
    pin().map_err(|e| WorkError::Affinity(format!("cannot pin a thread to CPU {cpu}: {e}")))
}

/// Where a thread of a workload's `--mode bubbles` (or `bound`) was placed:
/// its bubble (empty when bound) and the CPUs it had right after the
/// wake-up (or its pin).
#[derive(serde::Serialize, Debug, Clone, PartialEq)]
pub struct Placed {
    pub bubble: String,
    pub cpus: String,
}

/// The CPUs the calling thread may run on, in order.
pub(crate) fn allowed_cpus() -> Result<Vec<usize>, WorkError> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))
        .map_err(|e| WorkError::Affinity(format!("cannot read this thread's CPUs: {e}")))?;
    Ok((0..nix::sched::CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect())
}

/// The calling thread's CPUs as a list such as `0,1` (what a workload
/// reports of where a bubble put a thread).
pub(crate) fn allowed_cpu_list() -> Result<String, WorkError> {
    Ok(allowed_cpus()?
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(","))
}

/// Starts pinlearn's bubble scheduler inside this process, for workloads
/// that declare their bubbles themselves (`--mode bubbles`): only threads
/// put in a bubble are managed; `topology` (with `topology_map` for a
/// synthetic one) replaces the machine's.
pub(crate) fn bubbles_manager(topology: Option<&str>, topology_map: Option<&CpuSet>) -> Result<Manager, WorkError> {
    let machine = match topology {
        Some(spec) => Topology::from_spec_onto(spec, topology_map).map_err(|e| match e {
            TopologyError::NeedsMap { pus, .. } => WorkError::BadInput(format!(
                "--topology {spec:?} is synthetic: add --topology-map LIST to say which real CPUs its {pus} PUs are"
            )),
            e => WorkError::BadInput(format!("--topology: {e}")),
        })?,
        None => Topology::detect().map_err(|e| WorkError::Affinity(e.to_string()))?,
    };
    let request = Request {
        settings: Settings {
            policy: PolicyChoice::Bubbles,
            ..Settings::default()
        },
        ..Request::default()
    };
    Manager::start_on(&request, Registration::Explicit, &machine).map_err(|e| match e {
        EngineError::BadInput(message) => WorkError::BadInput(message),
        e => WorkError::Affinity(format!("pinlearn: {e}")),
    })
}
