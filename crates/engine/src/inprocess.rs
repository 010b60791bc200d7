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
use crate::declared::{BubbleApi, BubbleId, DeclaredBubbles};
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
}

impl BubbleApi for Registrar {
    fn bubbles(&self) -> &DeclaredBubbles {
        &self.bubbles
    }

    fn insert_thread(&self, bubble: BubbleId, tid: u32) -> Result<(), EngineError> {
        self.bubbles.insert_thread(bubble, tid)?;
        self.register(tid);
        Ok(())
    }

    fn insert_current_thread(&self, bubble: BubbleId) -> Result<(), EngineError> {
        self.bubbles.insert_thread(bubble, crate::live::current_tid())?;
        self.register_current_thread();
        Ok(())
    }

    /// Returns when the manager has taken a period with the bubbles as
    /// declared so far (threads that live shorter than a period are placed
    /// too); waits at most [`WAKE_UP_LIMIT`].
    fn wake_up(&self, bubble: BubbleId) -> Result<(), EngineError> {
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

    fn levels(&self) -> &[(PlaceKind, Vec<CpuSet>)] {
        &self.levels
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
        let levels = session.places.levels();
        let bubbles = match &session.declared {
            Some(declared) => declared.clone(),
            None if !session.settings.policy.places_bubbles() => DeclaredBubbles::refusing(format!(
                "this manager's policy is {}: bubbles are placed by policy = \"bubbles\"",
                session.settings.policy
            )),
            None => DeclaredBubbles::refusing(
                "this manager places threads by its rules file: declared bubbles need a manager started without one",
            ),
        };
        let engine = session.engine()?;
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
                let mut engine = engine;
                let driven = drive(&mut engine, &mut target, &session, None, |deadline, steps| {
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
                debug_assert!(started.elapsed() >= driven.wall);
                Ok(crate::supervise::summary(
                    &session,
                    &engine,
                    &driven,
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
