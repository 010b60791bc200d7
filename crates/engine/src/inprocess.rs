//! The engine as a library inside the application (the papers' mode).
//!
//! ```text
//!   app thread ──Manager::start(request, Registration)──► "pinlearn" thread
//!   worker     ──register_current_thread()──► shared tid set ─┐
//!                                                             ▼
//!   "pinlearn" thread: drive(engine, LiveProcess{root: getpid, only: set})
//!   app thread ──stop()──► flag ─► loop ends ─► masks restored ─► Summary
//! ```
//!
//! The manager thread never supervises itself. Signals stay the
//! application's business: nothing is installed here.

use crate::EngineError;
use crate::live::{Scope, ThreadStacks, get_affinity};
use crate::session::{Request, Session};
use crate::supervise::{Stop, Summary, cpu_time, drive};
use pinlearn_topology::Topology;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// Which of the application's threads the manager supervises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registration {
    /// Every thread of the process (except the manager's own).
    All,
    /// Only threads that call `register_current_thread` (or `register`).
    Explicit,
}

/// Lets threads put themselves under a running manager.
#[derive(Clone, Debug)]
pub struct Registrar {
    registered: Arc<Mutex<HashSet<u32>>>,
    stacks: ThreadStacks,
}

impl Registrar {
    /// Puts the calling thread under the manager, and remembers its stack
    /// so memory binding can move it (`mbind`) to the thread's node.
    pub fn register_current_thread(&self) {
        let tid = nix::unistd::gettid().as_raw() as u32;
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

/// A running in-process manager.
pub struct Manager {
    stop: Arc<(Mutex<bool>, Condvar)>,
    registered: Arc<Mutex<HashSet<u32>>>,
    stacks: ThreadStacks,
    worker: JoinHandle<Result<Summary, EngineError>>,
}

impl Manager {
    /// Validates `request` against this process's affinity and the machine,
    /// then starts the manager thread.
    pub fn start(request: &Request, registration: Registration) -> Result<Self, EngineError> {
        let allowed = get_affinity(0).map_err(|e| EngineError::io("cannot read this process's affinity", e))?;
        let machine = Topology::detect()
            .map_err(|e| EngineError::io("cannot read the machine topology", std::io::Error::other(e)))?;
        let session = Session::prepare(request, &allowed, &machine)?;
        let mut engine = session.engine()?;
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let registered = Arc::new(Mutex::new(HashSet::new()));
        let stacks = Arc::new(Mutex::new(HashMap::new()));
        let only = (registration == Registration::Explicit).then(|| registered.clone());
        let thread_stacks = stacks.clone();
        let flag = stop.clone();
        let worker = std::thread::Builder::new()
            .name("pinlearn".into())
            .spawn(move || {
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
                let (stop, wall) = drive(&mut engine, &mut target, &session, |deadline| {
                    let (lock, wake) = &*flag;
                    let stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
                    let timeout = deadline.saturating_duration_since(Instant::now());
                    let (stopped, _) = wake
                        .wait_timeout_while(stopped, timeout, |s| !*s)
                        .unwrap_or_else(|p| p.into_inner());
                    stopped.then_some(Stop::Requested)
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
            stop,
            registered,
            stacks,
            worker,
        })
    }

    /// Puts the calling thread under the manager (with `Registration::Explicit`).
    pub fn register_current_thread(&self) {
        self.registrar().register_current_thread();
    }

    /// A handle worker threads can clone and keep to register themselves.
    pub fn registrar(&self) -> Registrar {
        Registrar {
            registered: self.registered.clone(),
            stacks: self.stacks.clone(),
        }
    }

    /// Stops the manager, restores every mask it changed, and returns the summary.
    pub fn stop(self) -> Result<Summary, EngineError> {
        let (lock, wake) = &*self.stop;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        wake.notify_all();
        self.worker.join().unwrap_or_else(|_| {
            Err(EngineError::io(
                "the manager thread panicked",
                std::io::Error::other("panic"),
            ))
        })
    }
}
