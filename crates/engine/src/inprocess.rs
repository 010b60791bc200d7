//! The engine as a library inside the application (the papers' mode).
//!
//! ```text
//!   app thread ──Manager::start(request, Registration)──► "pinlearn" thread
//!   worker     ──register_current_thread()──► shared tid set ─┐
//!   any thread ──bubbles(): create / insert / ...──► DeclaredBubbles ─┤
//!              ──wake_up(bubble)──► "step now" ─► waits until placed  │
//!                                                                     ▼
//!   "pinlearn" thread: drive(engine, LiveProcess{root: getpid, only: set})
//!   app thread ──stop()──► flag ─► loop ends ─► masks restored ─► Summary
//! ```
//!
//! The manager thread never supervises itself. Signals stay the
//! application's business: nothing is installed here.

use crate::EngineError;
use crate::config::PolicyChoice;
use crate::declared::{BubbleId, DeclaredBubbles};
use crate::live::{Scope, ThreadStacks, get_affinity};
use crate::session::{Request, Session};
use crate::supervise::{Stop, Summary, Wake, cpu_time, drive};
use pinlearn_policy::PlaceKind;
use pinlearn_topology::{CpuSet, Topology};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Longest a wake-up waits for the manager to place the bubbles.
const WAKE_UP_LIMIT: Duration = Duration::from_secs(5);

/// Which of the application's threads the manager supervises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registration {
    /// Every thread of the process (except the manager's own).
    All,
    /// Only threads that call `register_current_thread` (or `register`).
    Explicit,
}

/// What the application's threads and the manager thread tell each other.
#[derive(Debug, Default)]
struct Control {
    stop: bool,
    /// The manager thread still runs its loop.
    running: bool,
    /// Wake-ups asked for, and those a finished period has served.
    wakes_asked: u64,
    wakes_served: u64,
}

type SharedControl = Arc<(Mutex<Control>, Condvar)>;

fn lock(control: &SharedControl) -> MutexGuard<'_, Control> {
    control.0.lock().unwrap_or_else(|p| p.into_inner())
}

/// Lets threads put themselves under a running manager, declare bubbles,
/// and ask about the places (cheap to clone and keep).
#[derive(Clone, Debug)]
pub struct Registrar {
    registered: Arc<Mutex<HashSet<u32>>>,
    stacks: ThreadStacks,
    bubbles: DeclaredBubbles,
    control: SharedControl,
    /// The places of each level of the manager's tree, outermost first.
    levels: Arc<Vec<(PlaceKind, Vec<CpuSet>)>>,
}

impl Registrar {
    /// Puts the calling thread under the manager, and remembers its stack
    /// so memory binding can move it (`mbind`) to the thread's node.
    pub fn register_current_thread(&self) {
        let tid = crate::live::current_tid();
        if let Some(stack) = crate::live::current_thread_stack() {
            self.stacks.lock().unwrap_or_else(|p| p.into_inner()).insert(tid, stack);
        }
        self.register(tid);
    }

    /// Puts thread `tid` of this process under the manager.
    pub fn register(&self, tid: u32) {
        self.registered.lock().unwrap_or_else(|p| p.into_inner()).insert(tid);
    }

    /// The program's bubbles (refusing every call, with the reason, when
    /// the manager does not place bubbles).
    pub fn bubbles(&self) -> &DeclaredBubbles {
        &self.bubbles
    }

    /// Puts thread `tid` in `bubble` and under the manager.
    pub fn insert_thread(&self, bubble: BubbleId, tid: u32) -> Result<(), EngineError> {
        self.bubbles.insert_thread(bubble, tid)?;
        self.register(tid);
        Ok(())
    }

    /// Puts the calling thread in `bubble` and under the manager.
    pub fn insert_current_thread(&self, bubble: BubbleId) -> Result<(), EngineError> {
        let tid = crate::live::current_tid();
        self.bubbles.insert_thread(bubble, tid)?;
        self.register_current_thread();
        Ok(())
    }

    /// Places the bubbles as declared so far at once: returns when the
    /// manager has taken a period with them (threads that live shorter
    /// than a period are placed too). `bubble` must exist.
    pub fn wake_up(&self, bubble: BubbleId) -> Result<(), EngineError> {
        self.bubbles.check(bubble)?;
        let mut control = lock(&self.control);
        if !control.running {
            return Err(EngineError::bad_input(
                "the manager has stopped: nothing places the bubbles",
            ));
        }
        control.wakes_asked += 1;
        let mine = control.wakes_asked;
        self.control.1.notify_all();
        let (control, waited) = self
            .control
            .1
            .wait_timeout_while(control, WAKE_UP_LIMIT, |c| c.wakes_served < mine && c.running)
            .unwrap_or_else(|p| p.into_inner());
        if control.wakes_served >= mine {
            Ok(())
        } else if waited.timed_out() {
            Err(EngineError::io(
                "the manager did not place the bubbles",
                std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no period within {WAKE_UP_LIMIT:?}"),
                ),
            ))
        } else {
            Err(EngineError::bad_input(
                "the manager has stopped: nothing places the bubbles",
            ))
        }
    }

    /// How many places the level called `level` has (`machine`, `package`,
    /// `die`, `l3`, `node` or `core`); 0 when the tree lacks that level.
    pub fn places(&self, level: &str) -> Result<usize, EngineError> {
        Ok(self.level(level)?.map_or(0, |places| places.len()))
    }

    /// The CPUs of place `index` of level `level`.
    pub fn place_cpus(&self, level: &str, index: usize) -> Result<CpuSet, EngineError> {
        let places = self.level(level)?.unwrap_or(&[]);
        places.get(index).cloned().ok_or_else(|| {
            EngineError::bad_input(format!(
                "level {level:?} has {} places here: {index} is not one of them",
                places.len()
            ))
        })
    }

    fn level(&self, level: &str) -> Result<Option<&[CpuSet]>, EngineError> {
        let kind = PlaceKind::from_level_name(level).ok_or_else(|| {
            let names: Vec<&str> = PlaceKind::LEVELS.iter().map(|(_, w)| *w).collect();
            EngineError::bad_input(format!("unknown level {level:?}: use one of {}", names.join(", ")))
        })?;
        Ok(self
            .levels
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, places)| places.as_slice()))
    }
}

/// Marks the manager thread as gone when it leaves, however it leaves, so
/// a wake-up never waits for it.
struct Running(SharedControl);

impl Drop for Running {
    fn drop(&mut self) {
        lock(&self.0).running = false;
        self.0.1.notify_all();
    }
}

/// A running in-process manager.
pub struct Manager {
    registrar: Registrar,
    worker: JoinHandle<Result<Summary, EngineError>>,
}

impl Manager {
    /// Validates `request` against this process's affinity and the machine,
    /// then starts the manager thread.
    pub fn start(request: &Request, registration: Registration) -> Result<Self, EngineError> {
        let machine = Topology::detect()
            .map_err(|e| EngineError::io("cannot read the machine topology", std::io::Error::other(e)))?;
        Self::start_on(request, registration, &machine)
    }

    /// [`Self::start`] on `machine` instead of the detected topology (a
    /// synthetic topology mapped onto real CPUs, or an XML file).
    pub fn start_on(request: &Request, registration: Registration, machine: &Topology) -> Result<Self, EngineError> {
        let allowed = get_affinity(0).map_err(|e| EngineError::io("cannot read this process's affinity", e))?;
        let session = Session::prepare(request, &allowed, machine)?;
        let tree = session.places.tree();
        let tree_levels: Vec<PlaceKind> = PlaceKind::LEVELS
            .iter()
            .map(|&(kind, _)| kind)
            .filter(|&kind| tree.has_level(kind))
            .collect();
        // For queries the machine is always one place (a tree of one node
        // has that node at its root).
        let levels: Vec<(PlaceKind, Vec<CpuSet>)> = PlaceKind::LEVELS
            .iter()
            .filter_map(|&(kind, _)| {
                let cpus: Vec<CpuSet> = match kind {
                    PlaceKind::Machine if !tree.has_level(kind) => vec![session.places.cpus[tree.root()].clone()],
                    _ => tree.places_at(kind).map(|p| session.places.cpus[p].clone()).collect(),
                };
                (!cpus.is_empty()).then_some((kind, cpus))
            })
            .collect();
        let bubbles = if session.settings.policy != PolicyChoice::Bubbles {
            DeclaredBubbles::refusing(format!(
                "this manager's policy is {}: bubbles are placed by policy = \"bubbles\"",
                session.settings.policy
            ))
        } else if let Some(path) = &request.bubbles {
            DeclaredBubbles::refusing(format!(
                "this manager places threads by the rules file {}: declared bubbles need a manager started without one",
                path.display()
            ))
        } else {
            DeclaredBubbles::new(Some(tree_levels))
        };
        let mut engine = session.engine()?;
        if session.settings.policy == PolicyChoice::Bubbles && request.bubbles.is_none() {
            engine = engine.with_declared_bubbles(bubbles.clone());
        }
        let control: SharedControl = Arc::new((
            Mutex::new(Control {
                running: true,
                ..Control::default()
            }),
            Condvar::new(),
        ));
        let registered = Arc::new(Mutex::new(HashSet::new()));
        let stacks = Arc::new(Mutex::new(HashMap::new()));
        let only = (registration == Registration::Explicit).then(|| registered.clone());
        let thread_stacks = stacks.clone();
        let shared = control.clone();
        let worker = std::thread::Builder::new()
            .name("pinlearn".into())
            .spawn(move || {
                let _running = Running(shared.clone());
                let me = nix::unistd::gettid().as_raw() as u32;
                let scope = Scope {
                    root: std::process::id(),
                    children: false,
                    only,
                    exclude: vec![me],
                    stacks: Some(thread_stacks),
                };
                let mut target = session.live_target(scope).watching_cpuset();
                let cpu0 = cpu_time(true);
                let started = Instant::now();
                // Wake-ups seen when the period now running began, and the
                // periods taken when the wait last looked.
                let (mut asked_at_step, mut steps_seen) = (0, 0);
                let (stop, wall) = drive(&mut engine, &mut target, &session, |deadline, steps| {
                    let mut control = lock(&shared);
                    if steps != steps_seen {
                        steps_seen = steps;
                        control.wakes_served = control.wakes_served.max(asked_at_step);
                        shared.1.notify_all();
                    }
                    let timeout = deadline.saturating_duration_since(Instant::now());
                    let (control, _) = shared
                        .1
                        .wait_timeout_while(control, timeout, |c| !c.stop && c.wakes_asked <= c.wakes_served)
                        .unwrap_or_else(|p| p.into_inner());
                    asked_at_step = control.wakes_asked;
                    if control.stop {
                        Some(Wake::Stop(Stop::Requested))
                    } else if control.wakes_asked > control.wakes_served {
                        Some(Wake::StepNow)
                    } else {
                        None
                    }
                })?;
                debug_assert!(started.elapsed() >= wall);
                Ok(crate::supervise::summary(
                    &session,
                    &engine,
                    stop,
                    wall,
                    cpu_time(true) - cpu0,
                ))
            })
            .map_err(|e| EngineError::io("cannot start the manager thread", e))?;
        Ok(Manager {
            registrar: Registrar {
                registered,
                stacks,
                bubbles,
                control,
                levels: Arc::new(levels),
            },
            worker,
        })
    }

    /// Puts the calling thread under the manager (with `Registration::Explicit`).
    pub fn register_current_thread(&self) {
        self.registrar().register_current_thread();
    }

    /// A handle worker threads can clone and keep to register themselves
    /// and declare bubbles.
    pub fn registrar(&self) -> &Registrar {
        &self.registrar
    }

    /// Stops the manager, restores every mask it changed, and returns the summary.
    pub fn stop(self) -> Result<Summary, EngineError> {
        lock(&self.registrar.control).stop = true;
        self.registrar.control.1.notify_all();
        self.worker.join().unwrap_or_else(|_| {
            Err(EngineError::io(
                "the manager thread panicked",
                std::io::Error::other("panic"),
            ))
        })
    }
}
