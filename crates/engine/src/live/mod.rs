//! A real Linux process (and, by default, its descendants) as a [`Target`].
//!
//! ```text
//!   observe():
//!     discover   /proc/ROOT/task/*  (+ /proc/PID/task/TID/children, recursively, unless --no-children)
//!                    │ live (pid, tid)
//!     sync           ├─► new: admit (open schedstat or perf, read comm and mask)
//!                    └─► ended: forget (a vanished thread is never an error)
//!     measure    per thread: Schedstat | Instructions; per process: Heartbeats (probe.rs)
//!                    │ speed per thread (heartbeat rates relative to their peak)
//!                    ▼
//!                samples sorted by key, progress for the guard
//!   place(key, cpus):
//!     Affinity::set (remembers the original mask) ─► sched_setaffinity(tid)
//!   restore() / Drop:
//!     every changed thread still alive gets its original mask back
//! ```
//!
//! Keys are the tid plus a generation in the high bits, so a tid the kernel
//! reuses during a run becomes a new thread for the policy.

mod affinity;
mod cpuset;
mod groups;
mod helper;
mod journal;
mod limits;
mod memory;
mod others;
mod pages;
mod priority;
mod probe;
mod spin;
mod tasks;
/// The calling thread's id.
pub fn current_tid() -> u32 {
    nix::unistd::gettid().as_raw() as u32
}

#[cfg(test)]
mod test_thread;
mod waiting;

pub use affinity::{Affinity, AffinityMask, get_affinity, set_affinity};
pub use cpuset::CpusetWatch;
pub use helper::end_with_caller;
pub use journal::{Journal, Restored, journal_path, replace_private_file, runtime_dir};
pub use limits::OpenFiles;
/// Restoring from a journal, and the watchdog that does it when the manager dies.
pub mod restore {
    pub use super::journal::{restore, watch};
}
pub use memory::{current_thread_stack, move_pages_to, nodes_of};
pub use pages::{FAULT_RING_BYTES, FaultPages, fault_recording_supported};
pub use priority::ManagerScheduling;
pub use probe::{CpuSamples, instructions_supported, resolve_metric, sampling_supported};
pub use spin::Isa;
pub use tasks::{Scan, TaskWatcher, process_alive, thread_name};
pub use waiting::{CodeKind, WaitingCode, WaitingRules};

use crate::EngineError;
use crate::config::Metric;
use crate::declared::DeclaredBubbles;
use crate::target::{Target, ThreadInfo};
use pinlearn_heartbeat::{BubbleChannelReader, BubbleOp};
use pinlearn_policy::{ThreadKey, ThreadSample};
use pinlearn_topology::CpuSet;
use probe::{FadingPeak, Heartbeats, Instructions, IoBytes, Schedstat, WaitingMaps};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Instant;

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

impl Scope {
    /// Process `root` (and its descendants when `children`), every thread.
    pub fn process_tree(root: u32, children: bool) -> Self {
        Scope {
            root,
            children,
            only: None,
            exclude: Vec::new(),
            stacks: None,
        }
    }
}

struct LiveThread {
    who: ThreadInfo,
    /// The mask to put back: the one the thread had when first seen, or,
    /// for a thread that inherited a pin of pinlearn's from its creator,
    /// the mask its process had before pinlearn.
    original: CpuSet,
    /// The mask the thread had when first seen.
    found_on: CpuSet,
    /// The mask it has unless someone else than pinlearn changed it: the
    /// one it was found on, then the last one pinlearn gave it.
    expected: CpuSet,
    /// Its program changed its mask: no longer measured or placed.
    left_to_program: bool,
    schedstat: Option<Schedstat>,
    instructions: Option<Instructions>,
    samples: Option<CpuSamples>,
    io: Option<IoBytes>,
    /// The pages it faulted on, where its memory follows it.
    faults: Option<pages::FaultPages>,
    /// Its fault count when its fault event was last closed.
    fault_count: Option<u64>,
    /// What scored the thread in the last period.
    scoring: Option<crate::target::Scoring>,
    /// Periods since the thread was first seen.
    age: u32,
    /// Its run time per sleep, read while other programs run apart.
    grain: groups::Grain,
}

/// A thread switched to fewer times a second than this is sampled every
/// period (sampling costs a timer on every switch to the thread, which in a
/// virtual machine means exits to the hypervisor); more often, only in one
/// period of [`sampling_gap`].
const CHEAP_SLICES_PER_S: f64 = 1000.0;

/// Of a thread switched to `switches_per_s` times a second, one period in
/// this many is sampled: every period below [`CHEAP_SLICES_PER_S`], else
/// one in `every` (`[sampling] every`), or fewer, so that the switches
/// sampled stay near [`CHEAP_SLICES_PER_S`] a second however often the
/// thread sleeps and wakes (each one sampled costs microseconds).
fn sampling_gap(switches_per_s: f64, every: u64) -> u64 {
    if switches_per_s < CHEAP_SLICES_PER_S {
        return 1;
    }
    let by_rate = (switches_per_s / CHEAP_SLICES_PER_S).ceil().min(1e6) as u64;
    every.max(by_rate).max(1)
}

/// What a thread's sampling event does in the coming period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Duty {
    /// Open and sampling.
    Sampling,
    /// Open but disabled: costs a thread switched to rarely next to nothing.
    Paused,
    /// Closed: an open event costs on every switch, even disabled.
    Closed,
}

/// The duty of a thread's event in the period after period `observed`: a
/// thread switched to often (`gap` > 1, [`sampling_gap`]) samples one
/// period in `gap` with its event closed in between; one settled in work
/// ([`probe::CpuSamples::settled_in_work`]) samples one period in
/// `settled_every` with it paused in between; any other every period.
fn sampling_duty(gap: u64, settled_in_work: bool, settled_every: u64, observed: u64) -> Duty {
    if gap > 1 {
        return if observed.is_multiple_of(gap) {
            Duty::Sampling
        } else {
            Duty::Closed
        };
    }
    if settled_in_work && !observed.is_multiple_of(settled_every.max(1)) {
        Duty::Paused
    } else {
        Duty::Sampling
    }
}

/// Threads usually name themselves right after they start: re-read the
/// name during this many periods.
const NAME_PERIODS: u32 = 5;

/// After that, a thread's name is re-read every this many periods: a
/// process can exec later (a shell's child becomes `gzip` when the machine
/// is busy), and a thread can rename itself at any time.
const NAME_RECHECK_PERIODS: u32 = 16;

/// A thread's mask is read back (to notice its program changing it) every
/// this many periods, and right before pinlearn moves it: with 64 threads a
/// read every period was a tenth of the manager's CPU time.
const MASK_CHECK_PERIODS: u64 = 4;

/// The live process tree being supervised.
pub struct LiveProcess {
    scope: Scope,
    metric: Metric,
    place_cpus: Vec<CpuSet>,
    threads: BTreeMap<ThreadKey, LiveThread>,
    key_of: HashMap<u32, ThreadKey>,
    generation: HashMap<u32, u64>,
    affinity: Affinity,
    /// The mask each supervised process had before pinlearn (its first
    /// thread's original), by pid.
    process_original: HashMap<u32, CpuSet>,
    /// The process that started each supervised process (not the root).
    parents: HashMap<u32, u32>,
    /// Processes with a thread pinlearn has moved.
    pinned_processes: HashSet<u32>,
    /// The index of the place spanning every allowed CPU (the OS's place).
    whole_place: Option<usize>,
    /// Leave alone a thread whose mask someone else changes.
    follow_program_affinity: bool,
    /// Calls of [`Self::follow_programs`], whose turn picks the threads checked.
    mask_checks: u64,
    /// Notes not yet taken (threads left to their program, ...).
    notes: Vec<String>,
    /// A thread could not be admitted for want of file descriptors (said once).
    out_of_files: bool,
    /// The root process's cpuset, when the kernel has one for it.
    cpuset: Option<CpusetWatch>,
    /// The CPUs the cpuset allows, as last read.
    cpuset_cpus: Option<CpuSet>,
    /// A change of the cpuset not yet taken by the supervisor.
    cpuset_change: Option<CpuSet>,
    tasks: TaskWatcher,
    /// The registered threads (`Scope::only`) at the last scan: a thread
    /// registered since is listed at once, even where the thread count did
    /// not change (one started, another ended), so an in-process wake-up
    /// places every thread its bubbles hold.
    registered_seen: Option<HashSet<u32>>,
    heartbeats: Heartbeats,
    /// Tids found in a heartbeat channel this period (scratch).
    beating: HashSet<u32>,
    /// The application's progress over the last observed period.
    progress: Option<f64>,
    /// The share of its sampled CPU time in waiting code, last period.
    waiting: Option<f64>,
    /// The share of the threads' sampled first-touched pages on another
    /// node than the one each ran on last, over the last period, weighted
    /// by run time ([`Target::remote`]).
    remote: Option<f64>,
    /// The share of its threads' runnable time queued for a CPU while the
    /// program had fewer than `all_cpus` CPUs' worth of time, last period.
    queued: Option<f64>,
    /// What other programs ran on the places' CPUs, and its share over the
    /// last second, as of the last period.
    others: others::OthersWatch,
    others_share: Option<f64>,
    /// Which scheduling groups the other programs run in.
    groups: groups::GroupWatch,
    /// How many CPUs the places span together.
    all_cpus: usize,
    last_observe: Option<Instant>,
    nominal_period_s: f64,
    /// OS index of each layout node's memory (memory binding on).
    memory_nodes: Option<Vec<u32>>,
    /// Moving each thread's first-touched pages after it.
    thread_memory: Option<ThreadMemory>,
    /// CPU-clock sampling (metrics `useful` and `heartbeat`): the waiting
    /// code of each process, the sampling period and ring size.
    sampling: Option<SamplingSetup>,
    /// The recent peak heartbeat rate (metric `heartbeat`) or I/O rate
    /// (metric `io`) speeds are relative to.
    rate_peak: FadingPeak,
    /// The root process's bubble channel, read into the declared bubbles.
    bubble_channel: Option<BubbleChannel>,
}

/// The bubbles a supervised program declares over its channel.
struct BubbleChannel {
    declared: DeclaredBubbles,
    reader: Option<BubbleChannelReader>,
    /// The channel was damaged or untrusted, or a declaration refused: it
    /// is not read again (said once).
    ignored: bool,
    /// Declarations of this period (reused).
    ops: Vec<BubbleOp>,
}

/// Threads' memory following them ([`LiveProcess::with_thread_memory`]).
struct ThreadMemory {
    /// OS index of each layout node's memory.
    nodes: Vec<u32>,
    /// The CPUs of each layout node, aligned with `nodes`.
    node_cpus: Vec<CpuSet>,
    /// Page faults could not be recorded, or pages not moved: no more
    /// tries (said once).
    off: bool,
    /// Some faults were not recorded (said once).
    missed_said: bool,
    /// Pages moved so far, and the time spent moving them.
    pages_moved: u64,
    moving_s: f64,
    /// Periods measured, whose turn picks the closed events checked.
    periods: u64,
    /// Threads whose faults are recorded, counted at each sync before new
    /// threads are admitted (at most [`FAULT_THREADS_MAX`]); those left out
    /// were said to be (once).
    recorded: usize,
    left_out_said: bool,
    /// Bytes of the ring asked for each thread's faults: halved down to
    /// [`pages::FAULT_RING_MIN_BYTES`] while the kernel will not map one
    /// (the locked memory an unprivileged user may have for perf rings is
    /// used up); said once, and once when even the smallest is refused.
    ring_bytes: usize,
    ring_shrunk_said: bool,
    ring_refused_said: bool,
}

/// What came of asking for a thread's fault event.
enum FaultsOpened {
    Recorded(pages::FaultPages),
    /// No ring could be mapped for it: it is left unrecorded.
    NoRing,
    /// The thread ended meanwhile.
    Ended,
    /// The kernel refused the event itself (said once, then off).
    Refused(String),
}

/// Threads whose page faults are recorded at once: each holds a ring of
/// [`pages::FAULT_RING_BYTES`] of locked memory while its event is open
/// (less where the locked-memory limit made it shrink).
const FAULT_THREADS_MAX: usize = 256;

/// A thread whose fault event is closed has its fault count read every
/// this many periods (staggered by tid); grown, the event opens again.
const FAULT_CHECK_PERIODS: u64 = 4;

/// Opens thread `tid`'s fault event with the ring `memory` asks for,
/// halving it while the kernel will not map it (said once in `notes`).
fn open_faults(memory: &mut ThreadMemory, notes: &mut Vec<String>, pid: u32, tid: u32) -> FaultsOpened {
    loop {
        match pages::FaultPages::open(tid, memory.ring_bytes) {
            Ok(faults) => return FaultsOpened::Recorded(faults),
            Err(pages::OpenError::Ring(_)) if memory.ring_bytes > pages::FAULT_RING_MIN_BYTES => {
                memory.ring_bytes /= 2;
                if !std::mem::replace(&mut memory.ring_shrunk_said, true) {
                    notes.push(format!(
                        "the locked memory for perf rings is short (perf_event_mlock_kb, ulimit -l): page faults are recorded into rings of {} KiB at most, and a fast first touch loses some",
                        memory.ring_bytes >> 10
                    ));
                }
            }
            Err(e) if e.io().raw_os_error() == Some(libc::ESRCH) || thread_ended(pid, tid) => {
                return FaultsOpened::Ended;
            }
            Err(e @ pages::OpenError::Ring(_)) => {
                if !std::mem::replace(&mut memory.ring_refused_said, true) {
                    notes.push(format!(
                        "cannot record the page faults of thread {tid} of process {pid} ({e}): its memory, and that of others beyond the limit, stays where they first touch it"
                    ));
                }
                return FaultsOpened::NoRing;
            }
            Err(e) => {
                return FaultsOpened::Refused(format!(
                    "cannot record the page faults of thread {tid} of process {pid} ({e})"
                ));
            }
        }
    }
}

/// Minor and major faults thread `tid` of `pid` has taken (fields 10 and 12
/// of its stat line).
fn faults_taken(pid: u32, tid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    Some(stat_line_field::<u64>(&stat, 10)? + stat_line_field::<u64>(&stat, 12)?)
}

/// How threads are sampled.
struct SamplingSetup {
    waiting: WaitingMaps,
    period_ns: u64,
    ring_bytes: usize,
    /// A thread could not be sampled (said once).
    refused: bool,
    /// Instruction pointers of one thread's period (reused).
    scratch: Vec<u64>,
    /// Sample during one period in this many (threads switched to often).
    every: u64,
    /// Sample during one period in this many (threads settled in work).
    settled_every: u64,
    /// Periods observed so far.
    observed: u64,
    /// Every thread samples in the coming period, whatever its duty: the
    /// second of a window whose placement changed hands
    /// ([`Target::measure_afresh`]).
    afresh: bool,
}

impl LiveProcess {
    /// `metric` must already be resolved (not `Auto`); `place_cpus` are the
    /// CPU sets of the layout's places; `period_s` the nominal period.
    pub fn new(scope: Scope, metric: Metric, place_cpus: Vec<CpuSet>, period_s: f64) -> Self {
        let mut process = LiveProcess {
            // Attached to an ancestor of pinlearn, never watch pinlearn.
            tasks: TaskWatcher::new(scope.root, scope.children).skipping(std::process::id()),
            registered_seen: None,
            scope,
            metric,
            place_cpus: Vec::new(),
            threads: BTreeMap::new(),
            key_of: HashMap::new(),
            generation: HashMap::new(),
            affinity: Affinity::default(),
            process_original: HashMap::new(),
            parents: HashMap::new(),
            pinned_processes: HashSet::new(),
            whole_place: None,
            follow_program_affinity: true,
            mask_checks: 0,
            notes: Vec::new(),
            out_of_files: false,
            cpuset: None,
            cpuset_cpus: None,
            cpuset_change: None,
            heartbeats: Heartbeats::default(),
            beating: HashSet::new(),
            progress: None,
            waiting: None,
            remote: None,
            queued: None,
            others: others::OthersWatch::new(CpuSet::new()),
            others_share: None,
            groups: groups::GroupWatch::new(),
            all_cpus: 0,
            last_observe: None,
            nominal_period_s: period_s,
            memory_nodes: None,
            thread_memory: None,
            sampling: None,
            rate_peak: FadingPeak::default(),
            bubble_channel: None,
        };
        process.set_place_cpus(place_cpus);
        process
    }

    /// Reads the bubbles the root process declares over its bubble channel
    /// (`pinlearn_connect` in the C ABI) into `declared`, every period.
    pub fn with_bubble_channel(mut self, declared: DeclaredBubbles) -> Self {
        self.bubble_channel = Some(BubbleChannel {
            declared,
            reader: None,
            ignored: false,
            ops: Vec::new(),
        });
        self
    }

    /// New declarations of the bubble channel, if there is one to read.
    fn read_bubble_channel(&mut self) {
        let Some(channel) = self.bubble_channel.as_mut().filter(|c| !c.ignored) else {
            return;
        };
        if channel.reader.is_none() {
            match BubbleChannelReader::open(self.scope.root) {
                Ok(reader) => channel.reader = reader,
                Err(e) => {
                    channel.ignored = true;
                    self.notes.push(e.to_string());
                    return;
                }
            }
        }
        let Some(reader) = channel.reader.as_mut() else {
            return;
        };
        channel.ops.clear();
        if let Err(e) = reader.read_new(&mut channel.ops) {
            channel.ignored = true;
            self.notes.push(e.to_string());
        }
        for op in &channel.ops {
            if let Err(e) = channel.declared.apply(op) {
                channel.ignored = true;
                self.notes.push(format!(
                    "bubble channel {}: a declaration was refused ({e}); the channel is ignored from now on",
                    reader.path().display()
                ));
                break;
            }
        }
    }

    /// Samples every thread's CPU clock `rate_hz` times a second of its CPU
    /// time and tells waiting from work by `rules` (metrics `useful` and
    /// `heartbeat`; other metrics ignore it).
    /// Rules that do not compile (settings not validated) leave the threads
    /// unsampled, with a note.
    pub fn with_sampling(mut self, settings: &crate::config::Sampling) -> Self {
        if !matches!(self.metric, Metric::Useful | Metric::Heartbeat) {
            return self;
        }
        let rules = match settings.waiting.compile() {
            Ok(rules) => rules,
            Err(why) => {
                self.notes.push(format!("{why}; threads are not sampled"));
                return self;
            }
        };
        let rate = f64::from(settings.rate_hz.max(1));
        // Room for two periods of samples of a thread running all the time
        // (16 bytes each), at least a page.
        let bytes = (rate * self.nominal_period_s * 2.0 * 16.0).ceil() as usize;
        self.sampling = Some(SamplingSetup {
            waiting: WaitingMaps::new(rules),
            period_ns: (1e9 / rate) as u64,
            ring_bytes: bytes.clamp(4096, 1 << 20).next_power_of_two(),
            refused: false,
            scratch: Vec::new(),
            every: u64::from(settings.every.max(1)),
            settled_every: u64::from(settings.settled_every.max(1)),
            observed: 0,
            afresh: false,
        });
        self
    }

    /// Enables memory binding: layout node `i` is OS memory node `nodes[i]`.
    pub fn with_memory_nodes(mut self, nodes: Vec<u32>) -> Self {
        self.memory_nodes = Some(nodes);
        self
    }

    /// Makes each thread's memory follow it ([`Target::move_thread_memory`]):
    /// its page faults are recorded from when it is first seen, and its
    /// pages moved on request. Layout node `i`, CPUs `node_cpus[i]`, is OS
    /// memory node `nodes[i]`. On two memory nodes or more, each period also
    /// reads where a few of each thread's pages are
    /// ([`Target::remote`]).
    pub fn with_thread_memory(mut self, nodes: Vec<u32>, node_cpus: Vec<CpuSet>) -> Self {
        self.thread_memory = Some(ThreadMemory {
            nodes,
            node_cpus,
            off: false,
            missed_said: false,
            pages_moved: 0,
            moving_s: 0.0,
            periods: 0,
            recorded: 0,
            left_out_said: false,
            ring_bytes: pages::FAULT_RING_BYTES,
            ring_shrunk_said: false,
            ring_refused_said: false,
        });
        self
    }

    /// Pages of threads moved after them so far, and the seconds spent
    /// moving them.
    pub fn thread_pages_moved(&self) -> Option<(u64, f64)> {
        self.thread_memory.as_ref().map(|m| (m.pages_moved, m.moving_s))
    }

    /// Says once that threads' memory cannot follow them, and stops trying.
    fn thread_memory_off(&mut self, why: String) {
        if let Some(memory) = self.thread_memory.as_mut()
            && !memory.off
        {
            memory.off = true;
            for thread in self.threads.values_mut() {
                thread.faults = None;
            }
            let note = format!("{why}; threads' memory stays where they first touched it");
            eprintln!("pinlearn: {note}");
            self.notes.push(note);
        }
    }

    /// Writes every original mask to `journal` before changing it.
    pub fn with_journal(mut self, journal: Journal) -> Self {
        self.affinity = std::mem::take(&mut self.affinity).with_journal(journal);
        self
    }

    /// Watches the cpuset of the root process: when it changes, threads
    /// are never asked onto a CPU outside it, and the change is handed to
    /// the supervisor ([`LiveProcess::take_cpuset_change`]).
    pub fn watching_cpuset(mut self) -> Self {
        self.cpuset = CpusetWatch::of(self.scope.root);
        self.cpuset_cpus = self.cpuset.as_ref().and_then(CpusetWatch::read);
        self
    }

    /// The CPUs the cpuset allows now, if it changed since the last call.
    pub fn take_cpuset_change(&mut self) -> Option<CpuSet> {
        self.cpuset_change.take()
    }

    /// The places, at the start and after a cpuset change (the supervisor's
    /// new layout), with what follows from them.
    pub fn set_place_cpus(&mut self, place_cpus: Vec<CpuSet>) {
        let all = place_cpus.iter().fold(CpuSet::new(), |union, cpus| union.union(cpus));
        self.whole_place = place_cpus.iter().position(|cpus| *cpus == all);
        self.all_cpus = all.len();
        self.others.set_cpus(all);
        self.place_cpus = place_cpus;
    }

    /// Reads the cpuset; on a change, the masks the kernel gave every
    /// thread become what is expected of them (not their program's doing).
    fn follow_cpuset(&mut self) {
        let Some(now) = self.cpuset.as_ref().and_then(CpusetWatch::read) else {
            return;
        };
        if self.cpuset_cpus.as_ref() == Some(&now) {
            return;
        }
        let before = self.cpuset_cpus.replace(now.clone());
        for thread in self.threads.values_mut() {
            if let Ok(mask) = get_affinity(thread.who.tid) {
                thread.expected = mask;
            }
        }
        let note = format!(
            "the cgroup cpuset of process {} changed ({} -> {now}); pinlearn follows it and its learning starts over",
            self.scope.root,
            before.map_or_else(|| "?".to_string(), |cpus| cpus.to_string())
        );
        eprintln!("pinlearn: {note}");
        self.notes.push(note);
        self.cpuset_change = Some(now);
    }

    /// Whether a thread whose mask someone else changes is left alone
    /// (the default) or placed on regardless.
    pub fn following_program_affinity(mut self, follow: bool) -> Self {
        self.follow_program_affinity = follow;
        self
    }

    /// What was said during the run (channels ignored, threads left to
    /// their program, ...), once each.
    pub fn take_notes(&mut self) -> Vec<String> {
        let mut notes = std::mem::take(&mut self.notes);
        notes.extend(self.heartbeats.take_notes());
        if let Some(sampling) = self.sampling.as_mut() {
            notes.extend(sampling.waiting.take_notes());
        }
        notes
    }

    /// Threads whose mask someone else than pinlearn changed: left to their
    /// program from now on (not measured, not placed, not restored), each
    /// with one note. Each thread is checked every [`MASK_CHECK_PERIODS`]
    /// periods (staggered by tid), and again right before pinlearn moves it
    /// ([`Target::place`]), so a program's own change is never overwritten.
    fn follow_programs(&mut self) {
        if !self.follow_program_affinity {
            return;
        }
        self.mask_checks = self.mask_checks.wrapping_add(1);
        let turn = self.mask_checks % MASK_CHECK_PERIODS;
        let due: Vec<ThreadKey> = self
            .threads
            .iter()
            .filter(|(_, thread)| !thread.left_to_program && u64::from(thread.who.tid) % MASK_CHECK_PERIODS == turn)
            .map(|(&key, _)| key)
            .collect();
        for key in due {
            self.left_by_program(key);
        }
    }

    /// Whether thread `key`'s program changed its mask (now or before);
    /// the first time it is seen, the thread is released with one note.
    fn left_by_program(&mut self, key: ThreadKey) -> bool {
        let Some(thread) = self.threads.get_mut(&key) else {
            return false;
        };
        if thread.left_to_program {
            return true;
        }
        if !self.follow_program_affinity {
            return false;
        }
        let Ok(now) = get_affinity(thread.who.tid) else {
            return false; // ended: measure() finds out
        };
        if now == thread.expected {
            return false;
        }
        thread.left_to_program = true;
        // Not placed by pinlearn any more: its memory is never moved either,
        // and it is not measured, so its sampling event (which costs it on
        // every switch) is closed, never to be opened again by a restart.
        thread.faults = None;
        thread.samples = None;
        let (who, expected) = (thread.who.clone(), thread.expected.clone());
        self.affinity.release(who.tid);
        let note = format!(
            "thread {} ({}) of process {} changed its own CPU mask ({expected} -> {now}); pinlearn leaves it alone from now on (follow_program_affinity = false keeps placing it)",
            who.tid,
            crate::printable(&who.name),
            who.pid
        );
        eprintln!("pinlearn: {note}");
        self.notes.push(note);
        true
    }

    /// Puts back the original mask of every thread pinlearn moved.
    pub fn restore(&mut self) -> Vec<(u32, io::Error)> {
        self.affinity.restore_all()
    }

    /// Every live (pid, tid) of the scope.
    fn discover(&mut self) -> Vec<(u32, u32)> {
        let registered = self
            .scope
            .only
            .as_ref()
            .map(|set| set.lock().map(|s| s.clone()).unwrap_or_default());
        if registered.is_some() && registered != self.registered_seen {
            self.tasks.rescan();
            self.registered_seen.clone_from(&registered);
        }
        let scan = self.tasks.scan();
        for &pid in &scan.ended {
            self.process_original.remove(&pid);
            self.pinned_processes.remove(&pid);
            self.parents.remove(&pid);
        }
        self.parents.extend(scan.parents);
        for pid in scan.ended {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                // A process that was killed could not unlink its heartbeat
                // channel at exit; do it for it.
                let _ = pinlearn_heartbeat::remove_channel(pid);
                let _ = pinlearn_heartbeat::remove_bubble_channel(pid);
            }
        }
        let mut threads = scan.threads;
        threads.retain(|(_, tid)| {
            !self.scope.exclude.contains(tid) && registered.as_ref().is_none_or(|set| set.contains(tid))
        });
        threads
    }

    /// A thread's file, or `None`: the thread ended, or (said once) no
    /// file descriptor is left for it.
    fn opened<T>(&mut self, pid: u32, tid: u32, file: io::Result<T>) -> Option<T> {
        match file {
            Ok(file) => Some(file),
            Err(e) if limits::is_out_of_files(&e) => {
                if !std::mem::replace(&mut self.out_of_files, true) {
                    let note = limits::out_of_files_note(pid, tid, &e);
                    eprintln!("pinlearn: {note}");
                    self.notes.push(note);
                }
                None
            }
            Err(_) => None,
        }
    }

    fn admit(&mut self, pid: u32, tid: u32) -> Option<LiveThread> {
        // A thread can end at any moment: failing to open its files means it is gone.
        let found_on = get_affinity(tid).ok()?;
        let original = self.original_of_new_thread(pid, &found_on);
        self.process_original.entry(pid).or_insert_with(|| original.clone());
        let name = thread_name(pid, tid).unwrap_or_default();
        let schedstat = match self.metric {
            Metric::Instructions => None,
            _ => Some(self.opened(pid, tid, Schedstat::open(pid, tid))?),
        };
        let instructions = match self.metric {
            Metric::Instructions => Some(self.opened(pid, tid, Instructions::open(tid))?),
            _ => None,
        };
        let io = match self.metric {
            Metric::Io => Some(self.opened(pid, tid, IoBytes::open(pid, tid))?),
            _ => None,
        };
        let samples = match self.sampling.as_mut() {
            Some(sampling) => match CpuSamples::open(tid, sampling.period_ns, sampling.ring_bytes) {
                Ok(samples) => Some(samples),
                // ESRCH: the thread is exiting (its /proc entry may still be there).
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) || thread_ended(pid, tid) => return None,
                Err(e) => {
                    if !sampling.refused {
                        sampling.refused = true;
                        let note = format!(
                            "cannot sample thread {tid} of process {pid} (perf_event_open: {e}); threads that cannot be sampled are scored by run share"
                        );
                        eprintln!("pinlearn: {note}");
                        self.notes.push(note);
                    }
                    None
                }
            },
            None => None,
        };
        let faults = match self.thread_memory.as_mut().filter(|memory| !memory.off) {
            Some(memory) if memory.recorded >= FAULT_THREADS_MAX => {
                if !std::mem::replace(&mut memory.left_out_said, true) {
                    self.notes.push(format!(
                        "more than {FAULT_THREADS_MAX} threads at once: the memory of those beyond stays where they first touch it"
                    ));
                }
                None
            }
            Some(memory) => match open_faults(memory, &mut self.notes, pid, tid) {
                FaultsOpened::Recorded(faults) => Some(faults),
                FaultsOpened::NoRing => None,
                FaultsOpened::Ended => return None,
                FaultsOpened::Refused(why) => {
                    self.thread_memory_off(why);
                    None
                }
            },
            None => None,
        };
        if original != found_on {
            // It inherited a pin of pinlearn's: restore it even if
            // pinlearn never moves it. A journal that cannot be written
            // leaves it as it is: the next period tries again.
            self.affinity.adopt(tid, &original).ok()?;
        }
        if faults.is_some()
            && let Some(memory) = self.thread_memory.as_mut()
        {
            memory.recorded += 1;
        }
        Some(LiveThread {
            who: ThreadInfo {
                pid,
                tid,
                name,
                ppid: self.parents.get(&pid).copied().unwrap_or(0),
            },
            original,
            expected: found_on.clone(),
            left_to_program: false,
            found_on,
            schedstat,
            instructions,
            samples,
            io,
            faults,
            fault_count: None,
            scoring: None,
            age: 0,
            grain: groups::Grain::default(),
        })
    }

    /// The mask to restore for a new thread of `pid` found on `found_on`.
    /// Threads and processes inherit their creator's mask: when that is one
    /// of pinlearn's places and pinlearn has pinned threads of the process
    /// (or, for a new process, of its parent), the mask is pinlearn's, and
    /// the one to restore is what the process had before pinlearn.
    fn original_of_new_thread(&self, pid: u32, found_on: &CpuSet) -> CpuSet {
        // The parent as the scan found it (a thread of the tree listed it
        // among its children): reading it from /proc/PID/stat would cost
        // a whole-process stat per new process, and that read waited for
        // seconds on crowded processes (docs/reliability.md).
        let creator = if self.process_original.contains_key(&pid) {
            Some(pid)
        } else {
            self.parents.get(&pid).copied()
        };
        match creator {
            Some(creator) if self.pinned_processes.contains(&creator) && self.place_cpus.contains(found_on) => self
                .process_original
                .get(&creator)
                .cloned()
                .unwrap_or_else(|| found_on.clone()),
            _ => found_on.clone(),
        }
    }

    /// Admits the threads that appeared and forgets those that ended.
    fn sync(&mut self, live: &[(u32, u32)]) {
        let live_tids: HashSet<u32> = live.iter().map(|&(_, tid)| tid).collect();
        let ended: Vec<u32> = self
            .key_of
            .keys()
            .copied()
            .filter(|tid| !live_tids.contains(tid))
            .collect();
        for tid in ended {
            self.forget(tid);
        }
        if let Some(memory) = self.thread_memory.as_mut() {
            memory.recorded = self.threads.values().filter(|thread| thread.faults.is_some()).count();
        }
        for &(pid, tid) in live {
            if self.key_of.contains_key(&tid) {
                continue;
            }
            if let Some(thread) = self.admit(pid, tid) {
                let key = (self.generation.get(&tid).copied().unwrap_or(0) << 32) | u64::from(tid);
                self.key_of.insert(tid, key);
                self.threads.insert(key, thread);
            }
        }
    }

    /// Drops everything known about thread `tid`: its probes, its saved
    /// mask and its heartbeat count. If the kernel reuses the tid, the next
    /// thread gets a new key (generation + 1).
    fn forget(&mut self, tid: u32) {
        if let Some(key) = self.key_of.remove(&tid) {
            self.threads.remove(&key);
        }
        self.affinity.forget(tid);
        self.heartbeats.forget(tid);
        *self.generation.entry(tid).or_insert(0) += 1;
    }

    /// Re-reads the names of young threads every period (threads name
    /// themselves right after they start) and of the others now and then
    /// (a process may exec, a thread rename itself).
    fn refresh_names(&mut self) {
        for thread in self.threads.values_mut() {
            let due = thread.age < NAME_PERIODS || thread.age % NAME_RECHECK_PERIODS == 0;
            thread.age = thread.age.wrapping_add(1);
            if due && let Some(name) = thread_name(thread.who.pid, thread.who.tid) {
                thread.who.name = name;
            }
        }
    }

    /// One sample per thread from the schedstat or instruction probe, with
    /// the heartbeat rates of the threads that beat; threads whose probe
    /// fails (they ended) are forgotten.
    fn measure(&mut self, samples: &mut Vec<ThreadSample>, period_s: f64) -> Measured {
        use crate::target::Scoring;
        let pids: HashSet<u32> = self.threads.values().map(|t| t.who.pid).collect();
        self.heartbeats.refresh(&pids);
        let rates = self.heartbeats.rates(period_s, &mut self.beating);
        if let Some(sampling) = self.sampling.as_mut() {
            sampling.waiting.retain(&pids);
        }
        let period_ns = period_s * 1e9;
        self.groups.refresh(&pids, Instant::now());
        if self.groups.newly_apart() {
            self.notes.push(
                "the other programs that ran beside it are in scheduling groups apart from its own (autogroup, CPU \
                 cgroups): where its threads sleep between short rounds the learner counts on their wake-ups taking \
                 most of a core they share"
                    .to_owned(),
            );
        }
        let apart = self.groups.wake_slice().is_some();
        let mut measured = Measured::default();
        let mut gone = Vec::new();
        let mut stale_code = HashSet::new();
        // The number of the period that starts now: the duty periods of
        // threads sampled only now and then are those it divides.
        if let Some(sampling) = self.sampling.as_mut() {
            sampling.observed += 1;
        }
        let fault_period = self.thread_memory.as_mut().map_or(0, |memory| {
            memory.periods += 1;
            memory.periods
        });
        for (&key, thread) in self.threads.iter_mut().filter(|(_, thread)| !thread.left_to_program) {
            let pid = thread.who.pid;
            let (cpu_share, ran_ns, read) = match thread.schedstat.as_mut().map(|s| s.run_share(period_ns)) {
                Some(Ok(share)) => {
                    measured.waited_ns += thread.schedstat.as_ref().map_or(0, Schedstat::waited_ns);
                    (share, thread.schedstat.as_ref().map_or(0, Schedstat::ran_ns), true)
                }
                Some(Err(_)) if thread_ended(pid, thread.who.tid) => {
                    gone.push(thread.who.tid);
                    continue;
                }
                // Alive but unreadable this time: no speed, nothing forgotten.
                Some(Err(_)) | None => (None, 0, false),
            };
            measured.ran_ns += ran_ns;
            let tid = thread.who.tid;
            if let (Some(memory), Some(faults)) = (
                self.thread_memory
                    .as_ref()
                    .filter(|m| !m.off && m.nodes.iter().any(|&n| n != m.nodes[0])),
                thread.faults.as_mut(),
            ) && ran_ns > 0
                && (u64::from(tid) + fault_period).is_multiple_of(REMOTE_EVERY)
                && let Some(share) = remote_share(memory, faults, pid, tid)
            {
                measured.remote_ns += ran_ns as f64 * share;
                measured.remote_weight_ns += ran_ns as f64;
            }
            self.others
                .ran_on(&thread.expected, ran_ns as f64 / 1e9, || last_cpu_of(pid, tid));
            if let Some(faults) = thread.faults.as_mut() {
                faults.drain();
                measured.faults_missed |= faults.missed > 0;
                // The event costs on every switch: a thread switched to
                // often keeps it open only while it faults.
                let tid = thread.who.tid;
                let switches_per_s = thread.schedstat.as_ref().map_or(0.0, |s| s.slices() as f64 / period_s);
                if faults.is_open() {
                    if switches_per_s >= CHEAP_SLICES_PER_S && faults.drained == 0 {
                        thread.fault_count = faults_taken(pid, tid);
                        if thread.fault_count.is_some() {
                            // Closing cannot fail.
                            let _ = faults.set_open(false);
                        }
                    }
                } else if (u64::from(tid) + fault_period).is_multiple_of(FAULT_CHECK_PERIODS)
                    && faults_taken(pid, tid).is_some_and(|now| thread.fault_count.is_none_or(|was| now > was))
                {
                    // Refused now (out of descriptors): tried again at its next turn.
                    let _ = faults.set_open(true);
                }
            }
            // The share of its recent samples in working code, when sampled.
            let work_share = match (thread.samples.as_mut(), self.sampling.as_mut()) {
                (Some(probe), Some(sampling)) => {
                    // A thread switched to rarely (it spins, or computes) is
                    // cheap to sample: always; one that sleeps and wakes
                    // often only in the duty periods. An error here means
                    // the thread ended: measured below.
                    let slices = thread.schedstat.as_ref().map_or(0, Schedstat::slices) as f64;
                    let gap = sampling_gap(slices / period_s, sampling.every);
                    let share = match sampling.waiting.of(pid) {
                        Some(code) => {
                            probe.take(code, pid, &mut sampling.scratch);
                            if probe.unmapped > 0 {
                                stale_code.insert(pid);
                            }
                            probe.work_share()
                        }
                        None => {
                            // Maps unreadable: drain the ring, score by run share.
                            probe.take(&mut WaitingCode::default(), pid, &mut sampling.scratch);
                            None
                        }
                    };
                    // After the period's samples are taken: turning sampling
                    // off closes the event; a thread settled in work keeps
                    // it, paused outside its duty periods.
                    let duty = if sampling.afresh {
                        Duty::Sampling
                    } else {
                        sampling_duty(gap, probe.settled_in_work(), sampling.settled_every, sampling.observed)
                    };
                    let _ = probe.set_enabled(duty != Duty::Closed);
                    let _ = probe.set_paused(duty == Duty::Paused);
                    share
                }
                _ => None,
            };
            measured.useful_ns += ran_ns as f64 * work_share.unwrap_or(1.0);
            if let Some(work) = work_share {
                measured.sampled_ns += ran_ns as f64;
                measured.sampled_waiting_ns += ran_ns as f64 * (1.0 - work);
            }
            let (speed, source) = match self.metric {
                Metric::Instructions => match thread.instructions.as_mut().map(|c| c.gips(period_s)) {
                    Some(Ok(gips)) => (gips, "instructions"),
                    _ if thread_ended(pid, thread.who.tid) => {
                        gone.push(thread.who.tid);
                        continue;
                    }
                    _ => (None, "instructions"),
                },
                // Threads that beat get their rate, relative to the peak, in observe.
                Metric::Heartbeat if self.beating.contains(&thread.who.tid) => (None, "heartbeat"),
                Metric::Io => match thread.io.as_mut().map(|io| io.rate(period_s)) {
                    Some(Ok(rate)) => {
                        if let Some(rate) = rate {
                            measured.io_rates.push((samples.len(), rate));
                        }
                        (None, "io")
                    }
                    _ if thread_ended(pid, thread.who.tid) => {
                        gone.push(thread.who.tid);
                        continue;
                    }
                    _ => (None, "io"),
                },
                _ => match work_share {
                    Some(work) => (cpu_share.map(|share| share * work), "useful"),
                    None => (cpu_share, "cpu"),
                },
            };
            thread.scoring = Some(Scoring {
                source,
                waiting_share: work_share.map(|work| 1.0 - work),
            });
            if let Some(&rate) = rates.get(&thread.who.tid) {
                measured.beat_rates.push((samples.len(), rate));
            }
            // The grain matters only beside programs in other groups; it is
            // counted afresh each time they are found apart.
            let grain_s = if apart {
                let tid = thread.who.tid;
                thread.grain.update(ran_ns, || groups::voluntary_switches(pid, tid))
            } else {
                thread.grain = groups::Grain::default();
                None
            };
            let worked = read.then(|| ran_ns as f64 / period_ns * work_share.unwrap_or(1.0));
            samples.push(ThreadSample {
                key,
                speed,
                share: cpu_share,
                grain_s,
                worked,
            });
        }
        if !gone.is_empty() {
            // Another thread may have started in its place, leaving the
            // count the task watcher checks unchanged.
            self.tasks.rescan();
        }
        for tid in gone {
            self.forget(tid);
        }
        if let Some(sampling) = self.sampling.as_mut() {
            for pid in stale_code {
                sampling.waiting.refresh_if_stale(pid);
            }
        }
        measured
    }
}

/// Whether thread `tid` of `pid` has ended (its /proc entry is gone).
fn thread_ended(pid: u32, tid: u32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}/task/{tid}")).exists()
}

/// Field `field` (numbered from 1, as in proc(5)) of the stat file at `path`.
fn stat_field<T: std::str::FromStr>(path: &str, field: usize) -> Option<T> {
    stat_line_field(&std::fs::read_to_string(path).ok()?, field)
}

/// Field `field` (from 1, at least 3) of a stat line already read.
fn stat_line_field<T: std::str::FromStr>(stat: &str, field: usize) -> Option<T> {
    // The name (field 2) may hold spaces and parentheses: fields after it
    // start after the last ')', with field 3.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(field.checked_sub(3)?)?
        .parse()
        .ok()
}

/// The CPU thread `tid` of `pid` ran on last (field 39 of its stat line).
fn last_cpu_of(pid: u32, tid: u32) -> Option<usize> {
    stat_field(&format!("/proc/{pid}/task/{tid}/stat"), 39)
}

/// What one period's measurement found besides the samples.
#[derive(Default)]
struct Measured {
    /// (sample index, beats per second) of every thread that beat.
    beat_rates: Vec<(usize, f64)>,
    /// Nanoseconds the threads ran, and were runnable but queued for a CPU
    /// (schedstat).
    ran_ns: u64,
    waited_ns: u64,
    /// Of those, the nanoseconds in working code (all of them unsampled).
    useful_ns: f64,
    /// Nanoseconds run by sampled threads, and of those in waiting code.
    sampled_ns: f64,
    sampled_waiting_ns: f64,
    /// (sample index, bytes per second) of every thread (metric `io`).
    io_rates: Vec<(usize, f64)>,
    /// A thread's page faults were not all recorded.
    faults_missed: bool,
    /// Nanoseconds run by threads whose pages' nodes were read, and those
    /// weighted by the share of the pages on another node than theirs.
    remote_weight_ns: f64,
    remote_ns: f64,
}

/// Pages of each thread whose nodes are read at its turn (one
/// move_pages(2) call that moves nothing).
const REMOTE_PAGES: usize = 16;

/// A thread's pages' nodes are read every this many periods, the threads'
/// turns staggered: about 12 us a thread each time, 64 threads at 20
/// periods a second 0.4% of a core (1.5% every period;
/// `examples/remote_share_cost.rs`). Each period's share is that of the
/// threads read in it, where they ran then.
const REMOTE_EVERY: u64 = 4;

/// The share of [`REMOTE_PAGES`] of the thread's recorded pages, spread
/// over them, that are on another memory node than the node of the CPU it
/// ran on last; `None` where that cannot be told (no page recorded or
/// mapped, a CPU outside the layout, a refused query).
fn remote_share(memory: &ThreadMemory, faults: &mut pages::FaultPages, pid: u32, tid: u32) -> Option<f64> {
    let addresses = faults.spread(REMOTE_PAGES);
    if addresses.is_empty() {
        return None;
    }
    let cpu = last_cpu_of(pid, tid)?;
    let here = memory.node_cpus.iter().position(|cpus| cpus.contains(cpu))?;
    let here = *memory.nodes.get(here)?;
    let nodes = memory::nodes_of(pid, &addresses).ok()?;
    let known = nodes.iter().flatten().count();
    let away = nodes.iter().flatten().filter(|&&node| node != here).count();
    (known > 0).then(|| away as f64 / known as f64)
}

impl Target for LiveProcess {
    fn observe(&mut self, samples: &mut Vec<ThreadSample>) -> Result<(), EngineError> {
        let now = Instant::now();
        let period_s = self
            .last_observe
            .map_or(self.nominal_period_s, |t| now.duration_since(t).as_secs_f64());
        self.last_observe = Some(now);

        self.read_bubble_channel();
        let live = self.discover();
        self.sync(&live);
        self.follow_cpuset();
        self.follow_programs();
        self.refresh_names();
        let measured = self.measure(samples, period_s);
        if let Some(sampling) = self.sampling.as_mut() {
            sampling.afresh = false;
        }
        if measured.faults_missed
            && let Some(memory) = self.thread_memory.as_mut()
            && !std::mem::replace(&mut memory.missed_said, true)
        {
            self.notes.push(format!(
                "a thread took page faults faster than {} a period, or more than {} pages: the pages beyond do not follow it",
                memory.ring_bytes / 16,
                pages::MAX_PAGES
            ));
        }

        // Progress for the guard, the best source there is: beats per
        // second where the program beats, bytes per second (io), instructions
        // per second with counters, else the CPU time it got in working code
        // (all of it when not sampled).
        let sum = |rates: &[(usize, f64)]| rates.iter().map(|&(_, rate)| rate).sum::<f64>();
        self.progress = if !measured.beat_rates.is_empty() {
            Some(sum(&measured.beat_rates))
        } else if self.metric == Metric::Io {
            Some(sum(&measured.io_rates))
        } else if self.metric == Metric::Instructions {
            Some(samples.iter().filter_map(|s| s.speed).sum())
        } else {
            Some(measured.useful_ns / (period_s * 1e9))
        };
        self.waiting = (measured.sampled_ns > 0.0).then(|| measured.sampled_waiting_ns / measured.sampled_ns);
        self.remote = (measured.remote_weight_ns > 0.0).then(|| measured.remote_ns / measured.remote_weight_ns);
        self.queued = crate::target::queued_share(
            measured.ran_ns as f64 / 1e9,
            measured.waited_ns as f64 / 1e9,
            self.all_cpus as f64 * period_s,
        );
        self.others_share = self.others.update(measured.ran_ns as f64 / 1e9, period_s);
        match self.metric {
            Metric::Heartbeat => self.rate_peak.set_speeds(samples, &measured.beat_rates),
            Metric::Io => self.rate_peak.set_speeds(samples, &measured.io_rates),
            _ => {}
        }
        Ok(())
    }

    fn waiting(&self) -> Option<f64> {
        self.waiting
    }

    /// Every sampled thread's share restarts from the coming period's
    /// samples, and every thread samples in the coming two periods (its
    /// event opened or resumed now, whatever its duty): a thread switched
    /// to often samples one period in `every`, so without them a window of
    /// six periods could be scored on the share of the placement before.
    fn measure_afresh(&mut self) {
        let Some(sampling) = self.sampling.as_mut() else {
            return;
        };
        sampling.afresh = true;
        for thread in self.threads.values_mut() {
            if let Some(probe) = thread.samples.as_mut() {
                probe.restart();
                // Refused (out of descriptors) or ended: its duty decides
                // again next period.
                let _ = probe.set_enabled(true);
                let _ = probe.set_paused(false);
            }
        }
    }

    fn remote(&self) -> Option<f64> {
        self.remote
    }

    fn queued(&self) -> Option<f64> {
        self.queued
    }

    fn others_share(&self) -> Option<f64> {
        self.others_share
    }

    fn others_by_cpu(&self) -> Option<&[Option<f64>]> {
        self.others.by_cpu()
    }

    fn wake_slice(&self) -> Option<f64> {
        self.groups.wake_slice()
    }

    fn scoring(&self, key: ThreadKey) -> Option<crate::target::Scoring> {
        self.threads.get(&key).and_then(|thread| thread.scoring)
    }

    /// The OS's place (every allowed CPU) means the thread's own mask: the
    /// one it had, or its program gave it, never a wider one; only a mask
    /// reaching outside the allowed CPUs is cut down to them.
    fn place(&mut self, key: ThreadKey, place: usize, cpus: &CpuSet) -> Result<bool, EngineError> {
        if self.left_by_program(key) {
            return Ok(false);
        }
        let Some(thread) = self.threads.get(&key) else {
            return Ok(false);
        };
        let tid = thread.who.tid;
        let mut target = if Some(place) == self.whole_place {
            let own = thread.original.intersection(cpus);
            if own.is_empty() {
                // Its own mask lies outside the allowed CPUs: leave it.
                return Ok(false);
            }
            own
        } else {
            cpus.clone()
        };
        // Never ask for a CPU the cgroup no longer allows (the kernel
        // refuses a mask with none of its CPUs).
        if let Some(allowed) = &self.cpuset_cpus {
            target = target.intersection(allowed);
            if target.is_empty() {
                return Ok(false);
            }
        }
        let placed = if target == thread.original {
            self.affinity.put_back(tid).map(|()| true)
        } else {
            self.affinity.set(tid, &thread.original, &target)
        }
        .map_err(|e| {
            EngineError::io(
                format!(
                    "cannot set the affinity of thread {tid} ({}) to {target}",
                    crate::printable(&thread.who.name)
                ),
                e,
            )
        })?;
        let pid = thread.who.pid;
        if placed {
            if let Some(thread) = self.threads.get_mut(&key) {
                thread.expected = target;
            }
            self.pinned_processes.insert(pid);
        }
        Ok(placed)
    }

    /// A thread on its own mask (within the allowed CPUs) is on the OS's
    /// place; one on an inherited pin of pinlearn's is on that place.
    fn initial_place(&self, key: ThreadKey) -> Option<usize> {
        let thread = self.threads.get(&key)?;
        let allowed = self.whole_place.map(|whole| &self.place_cpus[whole]);
        if thread.found_on == thread.original && allowed.is_some_and(|all| thread.original.is_subset(all)) {
            return self.whole_place;
        }
        self.place_cpus.iter().position(|c| *c == thread.found_on)
    }

    fn info(&self, key: ThreadKey) -> ThreadInfo {
        self.threads.get(&key).map(|t| t.who.clone()).unwrap_or_default()
    }

    fn last_cpu(&mut self, key: ThreadKey) -> Option<usize> {
        let thread = self.threads.get(&key)?;
        last_cpu_of(thread.who.pid, thread.who.tid)
    }

    fn progress(&self) -> Option<f64> {
        self.progress
    }

    /// Moves the pages thread `key` faulted on to `node` (move_pages(2)).
    /// A refusal (another user's process, a kernel without page
    /// migration) turns thread memory off with one note; the run goes on.
    fn move_thread_memory(&mut self, key: ThreadKey, node: usize) -> Result<bool, EngineError> {
        let Some(to) = self
            .thread_memory
            .as_ref()
            .filter(|memory| !memory.off)
            .and_then(|memory| memory.nodes.get(node).copied())
        else {
            return Ok(false);
        };
        let Some(thread) = self.threads.get_mut(&key) else {
            return Ok(false);
        };
        let (pid, tid) = (thread.who.pid, thread.who.tid);
        let Some(addresses) = thread.faults.as_mut().map(pages::FaultPages::addresses) else {
            return Ok(false);
        };
        if addresses.is_empty() {
            return Ok(false);
        }
        let started = Instant::now();
        let moved = memory::move_pages_to(pid, &addresses, to);
        let memory = self.thread_memory.as_mut().expect("checked above");
        memory.moving_s += started.elapsed().as_secs_f64();
        match moved {
            Ok(there) => {
                memory.pages_moved += there as u64;
                Ok(there > 0)
            }
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(false),
            Err(e) => {
                self.thread_memory_off(format!(
                    "cannot move the pages of thread {tid} of process {pid} to node {to} (move_pages: {e})"
                ));
                Ok(false)
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_that_switch_often_are_sampled_less_the_more_they_switch() {
        // Rarely switched: every period.
        assert_eq!(sampling_gap(0.0, 8), 1);
        assert_eq!(sampling_gap(999.0, 8), 1);
        // From the threshold: one period in `every`...
        assert_eq!(sampling_gap(1000.0, 8), 8);
        assert_eq!(sampling_gap(8000.0, 8), 8);
        // ... and beyond, about a thousand sampled switches a second.
        assert_eq!(sampling_gap(8001.0, 8), 9);
        assert_eq!(sampling_gap(190_000.0, 8), 190);
        assert_eq!(sampling_gap(190_000.0, 1000), 1000);
        assert_eq!(sampling_gap(f64::INFINITY, 8), 1_000_000);
        assert_eq!(sampling_gap(5000.0, 0), 5, "every 0 is read as 1");
    }

    #[test]
    fn a_thread_settled_in_work_samples_one_period_in_settled_every() {
        let duties =
            |gap, settled, every| -> Vec<Duty> { (1..=8).map(|p| sampling_duty(gap, settled, every, p)).collect() };
        use Duty::{Closed, Paused, Sampling};
        // Not settled (it waited lately, or too few samples): every period.
        assert_eq!(duties(1, false, 4), [Sampling; 8]);
        // Settled in work: one period in 4, paused (kept open) otherwise.
        assert_eq!(
            duties(1, true, 4),
            [Paused, Paused, Paused, Sampling, Paused, Paused, Paused, Sampling]
        );
        assert_eq!(duties(1, true, 1), [Sampling; 8], "settled_every 1: every period");
        assert_eq!(duties(1, true, 0), [Sampling; 8], "0 is read as 1");
        // Switched to often: the switches' gap decides, the event closed.
        assert_eq!(
            duties(2, true, 4),
            [Closed, Sampling, Closed, Sampling, Closed, Sampling, Closed, Sampling]
        );
        assert_eq!(duties(2, false, 4), duties(2, true, 4));
    }

    #[test]
    fn a_thread_left_to_its_program_keeps_no_sampling_event_even_after_a_restart() {
        use std::sync::atomic::{AtomicU8, Ordering};
        let allowed = get_affinity(0).expect("read the affinity");
        let Some(first) = allowed.iter().next().filter(|_| allowed.iter().count() > 1) else {
            return; // one CPU: a thread cannot give itself a narrower mask
        };
        // 0: spin; 1: narrow your own mask, then spin; 2: stop.
        let step = Arc::new(AtomicU8::new(0));
        let tids = Arc::new(Mutex::new(HashSet::new()));
        let spinner = {
            let (step, tids) = (step.clone(), tids.clone());
            std::thread::spawn(move || {
                tids.lock().unwrap().insert(nix::unistd::gettid().as_raw() as u32);
                let mut narrowed = false;
                while step.load(Ordering::Relaxed) < 2 {
                    if !narrowed && step.load(Ordering::Relaxed) == 1 {
                        set_affinity(0, &CpuSet::from_iter([first])).expect("narrow its own mask");
                        narrowed = true;
                    }
                    std::hint::spin_loop();
                }
            })
        };
        while tids.lock().unwrap().is_empty() {
            std::thread::yield_now();
        }
        let scope = Scope {
            only: Some(tids.clone()),
            ..Scope::process_tree(std::process::id(), false)
        };
        let mut target = LiveProcess::new(scope, Metric::Useful, vec![allowed.clone()], 0.05)
            .with_sampling(&crate::config::Sampling::default());
        let mut samples = Vec::new();
        target.observe(&mut samples).expect("observe");
        let key = samples.first().expect("the spinner").key;
        if target.threads[&key].samples.is_none() {
            step.store(2, Ordering::Relaxed);
            spinner.join().unwrap();
            return; // the kernel refuses sampling here: nothing to close
        }
        step.store(1, Ordering::Relaxed);
        while get_affinity(target.threads[&key].who.tid).expect("its mask") == allowed {
            std::thread::yield_now();
        }
        // pinlearn's next move finds the mask changed and leaves the thread.
        assert!(!target.place(key, 0, &allowed).expect("place"));
        assert!(target.threads[&key].left_to_program);
        assert!(target.threads[&key].samples.is_none(), "its sampling event is closed");
        target.measure_afresh();
        assert!(target.threads[&key].samples.is_none(), "a restart opens none for it");
        step.store(2, Ordering::Relaxed);
        spinner.join().unwrap();
    }

    #[test]
    fn last_cpu_is_the_cpu_a_pinned_thread_runs_on() {
        let allowed = get_affinity(0).expect("read the affinity");
        let pid = std::process::id();
        for cpu in allowed.iter() {
            let (tid, seen) = std::thread::spawn(move || {
                set_affinity(0, &CpuSet::from_iter([cpu])).expect("pin to one allowed CPU");
                // Run there a little: the kernel moves a thread when it runs.
                let started = std::time::Instant::now();
                while started.elapsed() < std::time::Duration::from_millis(20) {
                    std::hint::spin_loop();
                }
                let tid = nix::unistd::gettid().as_raw() as u32;
                (tid, last_cpu_of(pid, tid))
            })
            .join()
            .expect("the pinned thread");
            assert_eq!(seen, Some(cpu), "thread {tid} pinned to CPU {cpu}");
        }
        assert_eq!(last_cpu_of(pid, u32::MAX), None, "no such thread");
    }
}
