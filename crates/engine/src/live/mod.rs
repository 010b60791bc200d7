//! A real Linux process (and, by default, its descendants) as a [`Target`].
//!
//! ```text
//!   observe():
//!     /proc/ROOT/task/*  ─┐  (+ /proc/PID/task/TID/children, recursively, unless --no-children)
//!                         ├─► live tids ─► new: open schedstat (+perf), read comm and mask
//!                         │              └► gone: forget (a vanished thread is never an error)
//!     probe per thread   ─┴─► speed (cpu | instructions | heartbeat) ─► samples sorted by key
//!   place(key, cpus):
//!     Affinity::set (remembers the original mask) ─► sched_setaffinity(tid)
//!   restore() / Drop:
//!     every changed thread still alive gets its original mask back
//! ```
//!
//! Keys are the tid plus a generation in the high bits, so a tid the kernel
//! reuses during a run becomes a new thread for the policy.

mod affinity;
mod memory;
mod probe;

pub use affinity::{Affinity, get_affinity, set_affinity};
pub use memory::current_thread_stack;
pub use probe::{instructions_supported, resolve_metric};

use crate::EngineError;
use crate::config::Metric;
use crate::target::{Target, ThreadInfo};
use nix::dir::Dir;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use pinlearn_heartbeat::HeartbeatReader;
use pinlearn_policy::{ThreadKey, ThreadSample};
use pinlearn_topology::CpuSet;
use probe::{Instructions, Schedstat};
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Per-period fading of the peak heartbeat rate speeds are relative to.
const BEAT_PEAK_FADE: f64 = 0.99;

/// In-process: each registered thread's stack as (start, length), by tid.
pub type ThreadStacks = Arc<Mutex<HashMap<u32, (usize, usize)>>>;

/// Which threads of the machine belong to the target.
#[derive(Clone, Debug)]
pub struct Scope {
    /// The process given to `run`/`attach` (or this process, in-process).
    pub root: u32,
    /// Follow descendant processes.
    pub children: bool,
    /// If set, only these tids are supervised (in-process registration).
    pub only: Option<Arc<Mutex<HashSet<u32>>>>,
    /// Tids never supervised (the in-process manager's own thread).
    pub exclude: Vec<u32>,
    /// In-process: the stack (start, length) of each registered thread,
    /// which memory binding moves to the node with `mbind`.
    pub stacks: Option<ThreadStacks>,
}

struct LiveThread {
    who: ThreadInfo,
    original: CpuSet,
    schedstat: Option<Schedstat>,
    children: Option<File>,
    instructions: Option<Instructions>,
    beats: Option<u64>,
    /// Periods since the thread was first seen.
    age: u32,
}

/// Threads usually name themselves right after they start: re-read the
/// name during this many periods.
const NAME_PERIODS: u32 = 5;

fn thread_name(pid: u32, tid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// The live process tree being supervised.
pub struct LiveProcess {
    scope: Scope,
    metric: Metric,
    place_cpus: Vec<CpuSet>,
    threads: BTreeMap<ThreadKey, LiveThread>,
    key_of: HashMap<u32, ThreadKey>,
    generation: HashMap<u32, u64>,
    affinity: Affinity,
    /// Open /proc/PID/task directories, rewound and re-read every period.
    task_dirs: HashMap<u32, Dir>,
    heartbeats: HashMap<u32, HeartbeatReader>,
    beat_counts: Vec<(u32, u64)>,
    max_beat_rate: f64,
    /// The application's progress over the last observed period.
    progress: Option<f64>,
    last_observe: Option<Instant>,
    nominal_period_s: f64,
    /// OS index of each layout node's memory (memory binding on).
    memory_nodes: Option<Vec<u32>>,
}

impl LiveProcess {
    /// `metric` must already be resolved (not `Auto`); `place_cpus` are the
    /// CPU sets of the layout's places; `period_s` the nominal period.
    pub fn new(scope: Scope, metric: Metric, place_cpus: Vec<CpuSet>, period_s: f64) -> Self {
        LiveProcess {
            scope,
            metric,
            place_cpus,
            threads: BTreeMap::new(),
            key_of: HashMap::new(),
            generation: HashMap::new(),
            affinity: Affinity::default(),
            task_dirs: HashMap::new(),
            heartbeats: HashMap::new(),
            beat_counts: Vec::new(),
            max_beat_rate: 0.0,
            progress: None,
            last_observe: None,
            nominal_period_s: period_s,
            memory_nodes: None,
        }
    }

    /// Enables memory binding: layout node `i` is OS memory node `nodes[i]`.
    pub fn with_memory_nodes(mut self, nodes: Vec<u32>) -> Self {
        self.memory_nodes = Some(nodes);
        self
    }

    /// Puts back the original mask of every thread pinlearn moved.
    pub fn restore(&mut self) -> Vec<(u32, io::Error)> {
        self.affinity.restore_all()
    }

    /// Every live (pid, tid) of the scope, found through /proc.
    fn discover(&mut self) -> Vec<(u32, u32)> {
        let mut found = Vec::new();
        let mut pending = vec![self.scope.root];
        let mut seen_pids = HashSet::new();
        let mut live_pids = HashSet::new();
        let registered = self
            .scope
            .only
            .as_ref()
            .map(|set| set.lock().map(|s| s.clone()).unwrap_or_default());
        while let Some(pid) = pending.pop() {
            if !seen_pids.insert(pid) {
                continue;
            }
            let dir = match self.task_dirs.entry(pid) {
                Entry::Occupied(dir) => dir.into_mut(),
                Entry::Vacant(slot) => {
                    match Dir::open(
                        format!("/proc/{pid}/task").as_str(),
                        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
                        Mode::empty(),
                    ) {
                        Ok(dir) => slot.insert(dir),
                        Err(_) => continue,
                    }
                }
            };
            let tids: Vec<u32> = dir
                .iter()
                .flatten()
                .filter_map(|entry| entry.file_name().to_str().ok()?.parse().ok())
                .collect();
            if !tids.is_empty() {
                live_pids.insert(pid);
            }
            for tid in tids {
                if self.scope.children {
                    let known = self.key_of.get(&tid).and_then(|k| self.threads.get(k));
                    let children = match known.and_then(|t| t.children.as_ref()) {
                        Some(file) => read_children(file),
                        None => File::open(format!("/proc/{pid}/task/{tid}/children"))
                            .map(|f| read_children(&f))
                            .unwrap_or_default(),
                    };
                    pending.extend(children);
                }
                if self.scope.exclude.contains(&tid) {
                    continue;
                }
                if registered.as_ref().is_some_and(|set| !set.contains(&tid)) {
                    continue;
                }
                found.push((pid, tid));
            }
        }
        let ended: Vec<u32> = self
            .task_dirs
            .keys()
            .copied()
            .filter(|pid| !live_pids.contains(pid))
            .collect();
        for pid in ended {
            self.task_dirs.remove(&pid);
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                // A process that was killed could not unlink its heartbeat
                // channel at exit; do it for it.
                let _ = pinlearn_heartbeat::remove_channel(pid);
            }
        }
        found
    }

    fn admit(&mut self, pid: u32, tid: u32) -> Option<LiveThread> {
        // A thread can end at any moment: failing to open its files means it is gone.
        let original = get_affinity(tid).ok()?;
        let name = thread_name(pid, tid).unwrap_or_default();
        let schedstat = match self.metric {
            Metric::Instructions => None,
            _ => Some(Schedstat::open(pid, tid).ok()?),
        };
        let instructions = match self.metric {
            Metric::Instructions => Some(Instructions::open(tid).ok()?),
            _ => None,
        };
        let children = self
            .scope
            .children
            .then(|| File::open(format!("/proc/{pid}/task/{tid}/children")).ok())
            .flatten();
        Some(LiveThread {
            who: ThreadInfo { pid, tid, name },
            original,
            schedstat,
            children,
            instructions,
            beats: None,
            age: 0,
        })
    }

    fn refresh_heartbeats(&mut self, pids: &HashSet<u32>) {
        self.heartbeats.retain(|pid, _| pids.contains(pid));
        for &pid in pids {
            if let Entry::Vacant(slot) = self.heartbeats.entry(pid)
                && let Ok(Some(reader)) = HeartbeatReader::open(pid)
            {
                slot.insert(reader);
            }
        }
    }
}

fn read_children(file: &File) -> Vec<u32> {
    let mut buf = [0u8; 4096];
    let n = file.read_at(&mut buf, 0).unwrap_or(0);
    std::str::from_utf8(&buf[..n])
        .map(|s| s.split_ascii_whitespace().filter_map(|p| p.parse().ok()).collect())
        .unwrap_or_default()
}

impl Target for LiveProcess {
    fn observe(&mut self, samples: &mut Vec<ThreadSample>) -> Result<(), EngineError> {
        let now = Instant::now();
        let period_s = self
            .last_observe
            .map_or(self.nominal_period_s, |t| now.duration_since(t).as_secs_f64());
        self.last_observe = Some(now);

        let live = self.discover();
        let live_tids: HashSet<u32> = live.iter().map(|&(_, tid)| tid).collect();
        let ended: Vec<u32> = self
            .key_of
            .keys()
            .copied()
            .filter(|tid| !live_tids.contains(tid))
            .collect();
        for tid in ended {
            if let Some(key) = self.key_of.remove(&tid) {
                self.threads.remove(&key);
            }
            self.affinity.forget(tid);
            *self.generation.entry(tid).or_insert(0) += 1;
        }
        for &(pid, tid) in &live {
            if self.key_of.contains_key(&tid) {
                continue;
            }
            if let Some(thread) = self.admit(pid, tid) {
                let key = (self.generation.get(&tid).copied().unwrap_or(0) << 32) | u64::from(tid);
                self.key_of.insert(tid, key);
                self.threads.insert(key, thread);
            }
        }

        // Heartbeats are read whatever the metric: they are the guard's
        // measure of progress where the program beats.
        let pids: HashSet<u32> = self.threads.values().map(|t| t.who.pid).collect();
        self.refresh_heartbeats(&pids);
        let mut beats: HashMap<u32, u64> = HashMap::new();
        for reader in self.heartbeats.values() {
            reader.read_into(&mut self.beat_counts);
            beats.extend(self.beat_counts.iter().copied());
        }

        let period_ns = period_s * 1e9;
        let mut gone = Vec::new();
        let mut beat_rates = Vec::new();
        let mut ran_ns = 0u64;
        for (&key, thread) in self.threads.iter_mut() {
            if thread.age < NAME_PERIODS {
                thread.age += 1;
                if let Some(name) = thread_name(thread.who.pid, thread.who.tid) {
                    thread.who.name = name;
                }
            }
            let cpu_share = match thread.schedstat.as_mut().map(|s| s.run_share(period_ns)) {
                Some(Ok(share)) => {
                    ran_ns += thread.schedstat.as_ref().map_or(0, Schedstat::ran_ns);
                    share
                }
                Some(Err(_)) => {
                    gone.push(key);
                    continue;
                }
                None => None,
            };
            let beat_rate = beats.get(&thread.who.tid).and_then(|&count| {
                let rate = thread
                    .beats
                    .map(|before| count.saturating_sub(before) as f64 / period_s);
                thread.beats = Some(count);
                rate
            });
            let speed = match self.metric {
                Metric::Instructions => match thread.instructions.as_mut().map(|c| c.gips(period_s)) {
                    Some(Ok(gips)) => gips,
                    _ => {
                        gone.push(key);
                        continue;
                    }
                },
                // Threads that beat get their rate below, relative to the peak.
                Metric::Heartbeat if beats.contains_key(&thread.who.tid) => None,
                _ => cpu_share,
            };
            if let Some(rate) = beat_rate {
                beat_rates.push((samples.len(), rate));
            }
            samples.push(ThreadSample { key, speed });
        }
        // Heartbeat rates become speeds relative to a recent peak rate: the
        // fastest rate of this period, or the previous peak fading by 1% a
        // period (so one early burst does not shrink every later speed).
        // Progress for the guard: beats per second where the program beats,
        // instructions per second with counters, else the CPU time it got.
        self.progress = if !beat_rates.is_empty() {
            Some(beat_rates.iter().map(|&(_, rate)| rate).sum())
        } else if self.metric == Metric::Instructions {
            Some(samples.iter().filter_map(|s| s.speed).sum())
        } else {
            Some(ran_ns as f64 / period_ns)
        };
        if self.metric == Metric::Heartbeat {
            let fastest = beat_rates.iter().map(|&(_, rate)| rate).fold(0.0, f64::max);
            self.max_beat_rate = fastest.max(self.max_beat_rate * BEAT_PEAK_FADE);
            for (index, rate) in beat_rates {
                samples[index].speed = (self.max_beat_rate > 0.0).then(|| rate / self.max_beat_rate);
            }
        }
        if !gone.is_empty() {
            samples.retain(|s| !gone.contains(&s.key));
            for key in gone {
                if let Some(thread) = self.threads.remove(&key) {
                    self.key_of.remove(&thread.who.tid);
                    self.affinity.forget(thread.who.tid);
                    *self.generation.entry(thread.who.tid).or_insert(0) += 1;
                }
            }
        }
        Ok(())
    }

    fn place(&mut self, key: ThreadKey, _place: usize, cpus: &CpuSet) -> Result<bool, EngineError> {
        let Some(thread) = self.threads.get(&key) else {
            return Ok(false);
        };
        let tid = thread.who.tid;
        self.affinity.set(tid, &thread.original, cpus).map_err(|e| {
            EngineError::io(
                format!(
                    "cannot set the affinity of thread {tid} ({}) to {cpus}",
                    thread.who.name
                ),
                e,
            )
        })
    }

    fn initial_place(&self, key: ThreadKey) -> Option<usize> {
        let original = &self.threads.get(&key)?.original;
        self.place_cpus.iter().position(|c| c == original)
    }

    fn info(&self, key: ThreadKey) -> ThreadInfo {
        self.threads.get(&key).map(|t| t.who.clone()).unwrap_or_default()
    }

    fn progress(&self) -> Option<f64> {
        self.progress
    }

    fn bind_memory(&mut self, pid: u32, node: usize) -> Result<bool, EngineError> {
        let Some(nodes) = &self.memory_nodes else {
            return Ok(false);
        };
        let Some(&to) = nodes.get(node) else { return Ok(false) };
        if let Some(stacks) = &self.scope.stacks {
            // In-process (the papers' mode): bind the threads' stacks to the
            // node, so their new stack pages are placed there too.
            let stacks: Vec<(usize, usize)> = stacks
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .values()
                .copied()
                .collect();
            for (start, len) in stacks {
                memory::bind_range(start, len, to)
                    .map_err(|e| EngineError::io(format!("cannot bind a thread stack to node {to}"), e))?;
            }
        }
        match memory::migrate_process(pid, nodes, to) {
            Ok(()) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(false),
            Err(e) => Err(EngineError::io(
                format!("cannot move the memory of process {pid} to node {to}"),
                e,
            )),
        }
    }
}
