//! The manager loop, one core-level period at a time, independent of clocks.
//!
//! ```text
//!   step(target, time_s):
//!     target.observe ──► samples (sorted by thread key, speed per thread)
//!                        + target.progress (the application's rate, if known)
//!           │
//!           ▼
//!           │ policy.wants_cores()? target.last_cpu per thread ─► its core place
//!           ▼
//!     policy.decide(PeriodInput { samples, numa_tick: period % numa_every == 0 })
//!           │ Decision { place[i], utility[i] }
//!           ▼
//!     for each thread: place changed? ──yes──► target.place(key, cpus)  (re-pin)
//!           │
//!           ▼
//!     statistics per thread, trace row per thread
//!           │
//!           ▼
//!     policy.guard_arm() changed (Linux ⇄ learner)? ──yes──► target.measure_afresh()
//! ```
//!
//! The driver (real time in `supervise`, simulated time in the simulator)
//! calls `step` once per period; the engine never sleeps or reads a clock.

use crate::EngineError;
use crate::bubbles::BubbleRules;
use crate::declared::DeclaredBubbles;
use crate::places::Places;
use crate::status::{StatusBubble, StatusThread};
use crate::target::{Target, ThreadInfo};
use crate::trace::Trace;
use pinlearn_policy::{Arm, BubbleInput, PeriodInput, Policy, ThreadKey, ThreadSample};
use serde::Serialize;
use std::collections::BTreeMap;

/// What the engine learned about one thread over the run.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadSummary {
    #[serde(flatten)]
    pub who: ThreadInfo,
    /// Periods in which the thread was alive.
    pub periods: u64,
    /// Mean measured speed over the periods with a measurement.
    pub mean_speed: Option<f64>,
    /// Mean utility the policy learned from.
    pub mean_utility: Option<f64>,
    /// How many times pinlearn moved this thread.
    pub repins: u64,
    /// The CPU list the thread was allowed last (`(own)`: its own mask, never moved).
    pub last_place: String,
    /// Share of its periods the thread spent on each place, largest first.
    pub time_on: Vec<PlaceShare>,
    /// The metric that scored most of its periods (`useful`, `cpu`,
    /// `heartbeat`, ...; the latest of those that tie). Not the last
    /// period's: a program whose heartbeat channel goes at exit while its
    /// threads still run has them scored by their run shares then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'static str>,
    /// Mean share of its CPU-clock samples in waiting code (sampled threads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_share: Option<f64>,
    /// The bubble it was in (`--bubbles`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bubble: Option<String>,
}

/// The ended threads beyond the first [`ENDED_LISTED`], counted together so
/// that a program that starts threads all the time keeps the summary (and
/// the manager's memory) bounded.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EndedThreads {
    pub threads: u64,
    /// Periods the threads were alive, summed.
    pub periods: u64,
    pub repins: u64,
    /// Mean measured speed over all their measured periods.
    pub mean_speed: Option<f64>,
}

/// Ended threads whose records are kept one by one; later ones are only
/// counted in [`EndedThreads`].
pub const ENDED_LISTED: usize = 64;

/// Sums of the share of the threads' memory away from them, and the
/// periods that measured it ([`Engine::remote_share`]).
#[derive(Clone, Copy, Debug, Default)]
struct RemoteSums {
    all: (f64, u64),
    os: (f64, u64),
    learn: (f64, u64),
}

impl RemoteSums {
    fn add(&mut self, share: f64, placed_by: Option<Arm>) {
        let add = |sums: &mut (f64, u64)| {
            sums.0 += share;
            sums.1 += 1;
        };
        add(&mut self.all);
        match placed_by {
            Some(Arm::Os) => add(&mut self.os),
            Some(Arm::Learn) => add(&mut self.learn),
            None => {}
        }
    }
}

/// The share of the threads' memory on other NUMA nodes than the ones they
/// ran on, the mean over the periods that measured it: all of them, and
/// those placed by each arm of the guard (`None` where it placed none).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RemoteShare {
    pub mean: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub learn: Option<f64>,
}

/// How long a thread was allowed a CPU list.
#[derive(Clone, Debug, Serialize)]
pub struct PlaceShare {
    pub cpus: String,
    pub share: f64,
}

#[derive(Default)]
struct Running {
    sum: f64,
    count: u64,
}

impl Running {
    fn add(&mut self, v: f64) {
        if v.is_finite() {
            self.sum += v;
            self.count += 1;
        }
    }
    fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }
}

#[derive(Default)]
struct EndedTotals {
    threads: u64,
    periods: u64,
    repins: u64,
    speed: Running,
}

struct ThreadRecord {
    who: ThreadInfo,
    periods: u64,
    speed: Running,
    utility: Running,
    repins: u64,
    /// The place the thread is on, if it is one of the layout's places.
    place: Option<usize>,
    /// Periods spent per place (`None`: the thread's own mask).
    periods_on: BTreeMap<Option<usize>, u64>,
    /// Not seen in the last period.
    ended: bool,
    /// Periods scored by each source, in the order first seen.
    sources: Vec<(&'static str, u64)>,
    waiting: Running,
    /// Its bubble's name (`--bubbles`) now, for the status.
    bubble: Option<String>,
    /// The last bubble it was in, for the summary: a thread leaves its
    /// bubble as it ends (the preload's thread tree), and a period may see
    /// it between the two.
    was_in: Option<String>,
    /// The node its place lies in and how many of the policy's own periods
    /// it has stayed there since it came (`None`: a place across nodes, or
    /// its own mask).
    on_node: Option<(usize, u64)>,
    /// The node its memory was last moved to (or tried).
    memory_on: Option<usize>,
}

/// The manager: a policy, the places it chooses among, and per-thread records.
pub struct Engine {
    policy: Box<dyn Policy>,
    places: Places,
    place_names: Vec<String>,
    numa_every: u64,
    period: u64,
    threads: BTreeMap<ThreadKey, ThreadRecord>,
    /// Records in `threads` of threads that ended.
    ended_listed: usize,
    /// Ended threads no longer in `threads`.
    ended_totals: EndedTotals,
    samples: Vec<ThreadSample>,
    /// The core place of each CPU number ([`Places::core_of_cpu`]), and
    /// this period's core place of every sample when the policy asked.
    core_of_cpu: Vec<Option<usize>>,
    cores: Vec<Option<usize>>,
    /// Per place, the other programs' share of each core's time this
    /// period (the mean of its CPUs'), where the target tells it.
    others_by_core: Vec<Option<f64>>,
    repins: u64,
    /// Changes whenever a thread comes, goes, moves, is renamed or changes
    /// bubble (what `pinlearn status` shows).
    placement_version: u64,
    trace: Option<Trace>,
    /// Memory binding threshold zeta, when enabled.
    memory_binding: Option<f64>,
    /// Periods a thread stays on one node before its memory is moved
    /// there, when threads' memory follows them (Linux's windows not
    /// counted).
    thread_memory_after: Option<u64>,
    /// Node each process's memory was last moved to.
    memory_bound: BTreeMap<u32, usize>,
    memory_moves: u64,
    thread_memory_moves: u64,
    /// The sum of the target's `others_share` over the periods that had
    /// one, and how many had.
    others_sum: f64,
    others_periods: u64,
    /// The target's `remote` summed over the periods that had one, and
    /// how many had: all of them, and those the guard's Linux and learner
    /// arms placed (`placed_by`).
    remote: RemoteSums,
    /// The guard's arm that placed the period being measured (the arm of
    /// the last decision).
    placed_by: Option<Arm>,
    /// `--bubbles` rules and each live thread's bubble: (bubble, periods
    /// classified, so a name that settles late is matched again, thread
    /// id, process id).
    bubbles: Option<BubbleRules>,
    bubble_of_key: BTreeMap<ThreadKey, (Option<usize>, u32, u32, u32)>,
    /// The bubble and the process of every sample of this period, for
    /// the policy.
    bubble_of: Vec<Option<usize>>,
    process_of: Vec<u32>,
    /// The load the program declared for every sample of this period
    /// (empty when it declared none).
    load_of: Vec<Option<f64>>,
    /// Bubbles the program declares itself (in-process API), the version
    /// of them in `bubbles`, and the shakes asked for.
    declared: Option<DeclaredBubbles>,
    declared_seen: u64,
    shakes: u64,
    notes: Vec<String>,
}

/// Periods during which a thread is classified again (its name settles).
const CLASSIFY_PERIODS: u32 = 5;

/// The other programs' share of each core place (`places` long, `None`
/// where none of its CPUs was told), the mean of its CPUs' shares in
/// `by_cpu` (indexed by CPU number), into `out`.
fn others_by_core(by_cpu: &[Option<f64>], core_of_cpu: &[Option<usize>], places: usize, out: &mut Vec<Option<f64>>) {
    let mut sum = vec![(0.0, 0u32); places];
    for (cpu, share) in by_cpu.iter().enumerate() {
        let (Some(share), Some(Some(core))) = (share, core_of_cpu.get(cpu)) else {
            continue;
        };
        if let Some(slot) = sum.get_mut(*core) {
            slot.0 += share;
            slot.1 += 1;
        }
    }
    out.clear();
    out.extend(sum.iter().map(|&(total, n)| (n > 0).then(|| total / f64::from(n))));
}

impl Engine {
    /// `numa_every`: core periods per NUMA period (>= 1).
    pub fn new(policy: Box<dyn Policy>, places: Places, numa_every: u64, trace: Option<Trace>) -> Self {
        let place_names = places.cpus.iter().map(ToString::to_string).collect();
        let core_of_cpu = places.core_of_cpu();
        Engine {
            policy,
            places,
            place_names,
            numa_every: numa_every.max(1),
            period: 0,
            threads: BTreeMap::new(),
            ended_listed: 0,
            ended_totals: EndedTotals::default(),
            samples: Vec::new(),
            core_of_cpu,
            cores: Vec::new(),
            others_by_core: Vec::new(),
            repins: 0,
            placement_version: 0,
            trace,
            memory_binding: None,
            thread_memory_after: None,
            memory_bound: BTreeMap::new(),
            memory_moves: 0,
            thread_memory_moves: 0,
            others_sum: 0.0,
            others_periods: 0,
            remote: RemoteSums::default(),
            placed_by: None,
            bubbles: None,
            bubble_of_key: BTreeMap::new(),
            bubble_of: Vec::new(),
            process_of: Vec::new(),
            load_of: Vec::new(),
            declared: None,
            declared_seen: 0,
            shakes: 0,
            notes: Vec::new(),
        }
    }

    /// Puts threads in bubbles by `rules` every period (`--bubbles`); the
    /// policy gets each thread's bubble in [`PeriodInput::bubbles`].
    pub fn with_bubbles(mut self, rules: BubbleRules) -> Self {
        self.bubbles = Some(rules);
        self
    }

    /// Puts threads in the bubbles the program declares (the in-process
    /// API), read again whenever they change.
    pub fn with_declared_bubbles(mut self, declared: DeclaredBubbles) -> Self {
        self.declared = Some(declared);
        self
    }

    /// What the engine noticed while running (a thread matching two
    /// bubbles), each said once.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Fills `bubble_of`, `process_of` and `load_of` for this period's samples.
    fn classify(&mut self, target: &dyn Target) {
        self.bubble_of.clear();
        self.process_of.clear();
        self.load_of.clear();
        if let Some(snapshot) = self
            .declared
            .as_ref()
            .and_then(|d| d.snapshot_since(self.declared_seen))
        {
            self.declared_seen = snapshot.version;
            self.shakes = snapshot.shakes;
            self.bubbles = Some(snapshot.rules);
            self.bubble_of_key.clear();
        }
        let Some(rules) = self.bubbles.as_mut() else {
            return;
        };
        let samples = &self.samples;
        self.bubble_of_key
            .retain(|key, _| samples.binary_search_by_key(key, |s| s.key).is_ok());
        let loads = rules.has_thread_loads();
        for sample in samples {
            let entry = self.bubble_of_key.entry(sample.key).or_insert((None, 0, 0, 0));
            if entry.1 < CLASSIFY_PERIODS {
                let who = target.info(sample.key);
                entry.0 = rules.classify(&who);
                entry.1 += 1;
                entry.2 = who.tid;
                entry.3 = who.pid;
            }
            self.bubble_of.push(entry.0);
            self.process_of.push(entry.3);
            if loads {
                self.load_of.push(rules.thread_load(entry.2));
            }
        }
        for note in rules.take_notes() {
            eprintln!("pinlearn: {note}");
            self.notes.push(note);
        }
    }

    /// Moves a process's memory to the node where a share `zeta` of its
    /// threads runs, every NUMA period (paper 002 §5.2).
    pub fn with_memory_binding(mut self, zeta: f64) -> Self {
        self.memory_binding = Some(zeta);
        self
    }

    /// Moves the memory a thread first touched to the node of its place
    /// once it has been on that node `periods` core periods (at least 1);
    /// where the policy's guard hands periods to Linux
    /// ([`Policy::guard_arm`]), only the policy's own count.
    pub fn with_thread_memory(mut self, periods: u64) -> Self {
        self.thread_memory_after = Some(periods.max(1));
        self
    }

    /// Processes' memory moves made so far (memory binding).
    pub fn memory_moves(&self) -> u64 {
        self.memory_moves
    }

    /// Threads whose memory was moved after them so far.
    pub fn thread_memory_moves(&self) -> u64 {
        self.thread_memory_moves
    }

    /// The mean over the periods of the share of the program's CPUs' time
    /// other programs ran (`Target::others_share`), where the target told.
    pub fn others_share(&self) -> Option<f64> {
        (self.others_periods > 0).then(|| self.others_sum / self.others_periods as f64)
    }

    /// The mean over the periods of the share of the threads' memory on
    /// other nodes than the ones they ran on (`Target::remote`), overall and
    /// in the periods each arm of the guard placed, where the target told.
    pub fn remote_share(&self) -> Option<RemoteShare> {
        let mean = |(sum, periods): (f64, u64)| (periods > 0).then(|| sum / periods as f64);
        Some(RemoteShare {
            mean: mean(self.remote.all)?,
            os: mean(self.remote.os),
            learn: mean(self.remote.learn),
        })
    }

    /// What the policy's do-no-harm guard did, if it has one.
    pub fn guard_stats(&self) -> Option<pinlearn_policy::GuardStats> {
        self.policy.guard_stats()
    }

    pub fn policy_name(&self) -> String {
        self.policy.name()
    }

    /// One core-level period: observe, decide, re-pin what changed, record.
    pub fn step(&mut self, target: &mut dyn Target, time_s: f64) -> Result<(), EngineError> {
        self.samples.clear();
        target.observe(&mut self.samples)?;
        debug_assert!(
            self.samples.windows(2).all(|w| w[0].key < w[1].key),
            "samples must be sorted"
        );

        self.classify(target);
        let numa_tick = self.period > 0 && self.period.is_multiple_of(self.numa_every);
        let wants_cores = self.policy.wants_cores();
        self.cores.clear();
        if wants_cores {
            let core_of_cpu = &self.core_of_cpu;
            self.cores.extend(self.samples.iter().map(|sample| {
                target
                    .last_cpu(sample.key)
                    .and_then(|cpu| core_of_cpu.get(cpu).copied().flatten())
            }));
        }
        let others = target.others_share();
        if let Some(share) = others {
            self.others_sum += share;
            self.others_periods += 1;
        }
        let others_by_core = target
            .others_by_cpu()
            .map(|by_cpu| {
                others_by_core(
                    by_cpu,
                    &self.core_of_cpu,
                    self.places.layout.places().len(),
                    &mut self.others_by_core,
                )
            })
            .is_some();
        let input = PeriodInput {
            period: self.period,
            time_s,
            threads: &self.samples,
            numa_tick,
            progress: target.progress(),
            waiting: target.waiting(),
            queued: target.queued(),
            others,
            remote: target.remote(),
            others_by_core: others_by_core.then_some(&self.others_by_core[..]),
            wake_slice_s: target.wake_slice(),
            cores: wants_cores.then_some(&self.cores[..]),
            bubbles: self.bubbles.as_ref().map(|rules| BubbleInput {
                set: rules.set(),
                of: &self.bubble_of,
                loads: &self.load_of,
                shakes: self.shakes,
                processes: &self.process_of,
            }),
        };
        // For the trace only: what the period measured of the whole program
        // (what a guard compares), and which of its arms places the next
        // period.
        let progress = if self.trace.is_some() {
            input.progress_or_speed_sum()
        } else {
            None
        };
        let remote = input.remote;
        if let Some(share) = remote.filter(|s| (0.0..=1.0).contains(s)) {
            self.remote.add(share, self.placed_by);
        }
        let decision = self.policy.decide(&input);
        let guard_arm = self.policy.guard_arm();
        let changes_hands = matches!((self.placed_by, guard_arm), (Some(was), Some(now)) if was != now);
        self.placed_by = guard_arm;
        let linux_s_window = guard_arm == Some(Arm::Os);
        let arm = match guard_arm {
            Some(Arm::Os) => "os",
            Some(Arm::Learn) => "learn",
            None => "",
        };
        assert_eq!(
            decision.place.len(),
            self.samples.len(),
            "policy {} returned a wrong-sized decision",
            self.policy.name()
        );

        let mut placement_changed = false;
        for (i, sample) in self.samples.iter().enumerate() {
            let known = self.threads.contains_key(&sample.key);
            placement_changed |= !known;
            let record = self.threads.entry(sample.key).or_insert_with(|| ThreadRecord {
                who: target.info(sample.key),
                periods: 0,
                speed: Running::default(),
                utility: Running::default(),
                repins: 0,
                place: target.initial_place(sample.key),
                periods_on: BTreeMap::new(),
                ended: false,
                sources: Vec::new(),
                waiting: Running::default(),
                bubble: None,
                was_in: None,
                on_node: None,
                memory_on: None,
            });
            if record.ended {
                record.ended = false;
                self.ended_listed -= 1;
                placement_changed = true;
            }
            record.periods += 1;
            // A thread may be renamed at any time (its process execs, it
            // names itself); the target says when it re-reads names.
            let who = target.info(sample.key);
            if who != record.who {
                placement_changed |= who.name != record.who.name;
                record.who = who;
            }
            if let Some(speed) = sample.speed {
                record.speed.add(speed);
            }
            let scoring = target.scoring(sample.key);
            if let Some(scoring) = scoring {
                match record.sources.iter_mut().find(|(source, _)| *source == scoring.source) {
                    Some((_, periods)) => *periods += 1,
                    None => record.sources.push((scoring.source, 1)),
                }
                if let Some(waiting) = scoring.waiting_share {
                    record.waiting.add(waiting);
                }
            }
            let utility = decision.utility.get(i).copied().unwrap_or(f64::NAN);
            record.utility.add(utility);

            let wanted = decision.place[i];
            if record.place != Some(wanted) && target.place(sample.key, wanted, &self.places.cpus[wanted])? {
                record.place = Some(wanted);
                record.repins += 1;
                self.repins += 1;
                placement_changed = true;
            }
            *record.periods_on.entry(record.place).or_insert(0) += 1;
            // A stay on a node counts the policy's own periods: Linux's
            // windows in a guarded run (its probes, the hand-back's pins)
            // neither add to it nor end it, or a learner whose windows
            // alternate with Linux's never keeps a thread long enough for
            // its memory to follow.
            if let Some(after) = self.thread_memory_after
                && !linux_s_window
            {
                let node = record.place.and_then(|p| self.places.layout.places()[p].node);
                match (&mut record.on_node, node) {
                    (Some((on, periods)), Some(node)) if *on == node => *periods += 1,
                    (on_node, node) => *on_node = node.map(|node| (node, 0)),
                }
                if let Some((node, periods)) = record.on_node
                    && periods >= after
                    && record.memory_on != Some(node)
                {
                    // Tried once per stay: a target that cannot move it is not asked again.
                    record.memory_on = Some(node);
                    if target.move_thread_memory(sample.key, node)? {
                        self.thread_memory_moves += 1;
                    }
                }
            }
            if let (Some(rules), Some(bubble)) = (&self.bubbles, self.bubble_of.get(i)) {
                let name = bubble.map(|b| &rules.set().get(b).name);
                if record.bubble.as_ref() != name {
                    record.bubble = name.cloned();
                    placement_changed = true;
                }
                if name.is_some() {
                    record.was_in = name.cloned();
                }
            }
            if let Some(trace) = self.trace.as_mut() {
                let place = record.place.map_or("", |p| &self.place_names[p]);
                let bubble = record.bubble.as_deref().unwrap_or("");
                let waiting = scoring.and_then(|s| s.waiting_share);
                trace.row(
                    time_s,
                    self.period,
                    &record.who,
                    place,
                    sample.speed,
                    utility,
                    bubble,
                    waiting,
                    sample.share,
                    sample.grain_s,
                    progress,
                    arm,
                    remote,
                )?;
            }
        }
        if changes_hands {
            target.measure_afresh();
        }
        placement_changed |= self.retire_ended();
        self.placement_version += u64::from(placement_changed);
        if let Some(zeta) = self.memory_binding
            && numa_tick
            && self.places.layout.nodes() > 1
        {
            self.bind_memory(target, zeta)?;
        }
        self.period += 1;
        Ok(())
    }

    /// New places and a new policy over them (a cgroup cpuset changed):
    /// every thread's place is unknown until the policy's next decision.
    /// Threads' memory stops following them unless the new places say it
    /// still can ([`Places::memory_moves_with_threads`]).
    pub fn replace_places(&mut self, places: Places, policy: Box<dyn Policy>) {
        self.place_names = places.cpus.iter().map(ToString::to_string).collect();
        self.core_of_cpu = places.core_of_cpu();
        if !places.memory_moves_with_threads {
            self.thread_memory_after = None;
        }
        self.places = places;
        self.policy = policy;
        self.placement_version += 1;
        for record in self.threads.values_mut() {
            record.place = None;
            record.periods_on.clear();
        }
    }

    /// Marks the records of threads missing from this period as ended:
    /// the first [`ENDED_LISTED`] stay listed, later ones are folded into
    /// the totals and dropped.
    /// Returns whether any thread ended.
    fn retire_ended(&mut self) -> bool {
        let live = self.samples.len();
        if self.threads.len() - self.ended_listed <= live {
            return false;
        }
        let samples = &self.samples;
        let newly_ended: Vec<ThreadKey> = self
            .threads
            .iter()
            .filter(|(key, record)| !record.ended && samples.binary_search_by_key(key, |s| &s.key).is_err())
            .map(|(&key, _)| key)
            .collect();
        if let Some(declared) = &self.declared {
            // A thread id already given to a live thread names that thread.
            let live_tids: std::collections::BTreeSet<u32> = samples
                .iter()
                .filter_map(|sample| self.threads.get(&sample.key).map(|record| record.who.tid))
                .collect();
            let ended_tids: Vec<u32> = newly_ended
                .iter()
                .filter_map(|key| self.threads.get(key).map(|record| record.who.tid))
                .filter(|tid| !live_tids.contains(tid))
                .collect();
            declared.forget_threads(&ended_tids);
        }
        for key in newly_ended {
            if self.ended_listed < ENDED_LISTED {
                if let Some(record) = self.threads.get_mut(&key) {
                    record.ended = true;
                    self.ended_listed += 1;
                }
            } else if let Some(record) = self.threads.remove(&key) {
                let totals = &mut self.ended_totals;
                totals.threads += 1;
                totals.periods += record.periods;
                totals.repins += record.repins;
                totals.speed.sum += record.speed.sum;
                totals.speed.count += record.speed.count;
            }
        }
        let live_pids: std::collections::BTreeSet<u32> =
            self.threads.values().filter(|r| !r.ended).map(|r| r.who.pid).collect();
        self.memory_bound.retain(|pid, _| live_pids.contains(pid));
        true
    }

    /// Changes whenever [`Engine::placement`] may have changed.
    pub fn placement_version(&self) -> u64 {
        self.placement_version
    }

    /// The bubbles known (parents first) and where every live thread is,
    /// for `pinlearn status`.
    pub fn placement(&self) -> (Vec<StatusBubble>, Vec<StatusThread>) {
        let bubbles = self.bubbles.as_ref().map_or_else(Vec::new, |rules| {
            let set = rules.set();
            set.iter()
                .map(|b| StatusBubble {
                    name: b.name.clone(),
                    parent: b.parent.map(|p| set.get(p).name.clone()),
                })
                .collect()
        });
        let threads = self
            .threads
            .values()
            .filter(|r| !r.ended)
            .map(|r| StatusThread {
                pid: r.who.pid,
                tid: r.who.tid,
                name: r.who.name.clone(),
                bubble: r.bubble.clone(),
                cpus: r.place.map(|p| self.place_names[p].clone()),
            })
            .collect();
        (bubbles, threads)
    }

    /// Every thread seen so far, listed or not.
    pub fn threads_seen(&self) -> usize {
        self.threads.len() + self.ended_totals.threads as usize
    }

    /// The ended threads not in [`Engine::thread_summaries`], if any.
    pub fn ended_not_listed(&self) -> Option<EndedThreads> {
        let totals = &self.ended_totals;
        (totals.threads > 0).then(|| EndedThreads {
            threads: totals.threads,
            periods: totals.periods,
            repins: totals.repins,
            mean_speed: totals.speed.mean(),
        })
    }

    fn bind_memory(&mut self, target: &mut dyn Target, zeta: f64) -> Result<(), EngineError> {
        let places = self.places.layout.places();
        let threads: Vec<(u32, Option<usize>)> = self
            .samples
            .iter()
            .filter_map(|s| self.threads.get(&s.key))
            .map(|r| (r.who.pid, r.place.and_then(|p| places[p].node)))
            .collect();
        for (pid, node) in crate::memory::plan(&threads, &self.memory_bound, zeta) {
            if target.bind_memory(pid, node)? {
                self.memory_bound.insert(pid, node);
                self.memory_moves += 1;
            }
        }
        Ok(())
    }

    /// Periods run so far.
    pub fn periods(&self) -> u64 {
        self.period
    }

    /// Threads measured in the last period.
    pub fn live_threads(&self) -> usize {
        self.samples.len()
    }

    /// Re-pins made so far.
    pub fn repins(&self) -> u64 {
        self.repins
    }

    /// Per-thread summaries in key order: every live thread and the first
    /// [`ENDED_LISTED`] that ended.
    pub fn thread_summaries(&self) -> Vec<ThreadSummary> {
        self.threads
            .values()
            .map(|r| ThreadSummary {
                who: r.who.clone(),
                periods: r.periods,
                mean_speed: r.speed.mean(),
                mean_utility: r.utility.mean(),
                source: r
                    .sources
                    .iter()
                    .max_by_key(|(_, periods)| *periods)
                    .map(|(source, _)| *source),
                waiting_share: r.waiting.mean(),
                bubble: r.was_in.clone(),
                repins: r.repins,
                last_place: self.place_name(r.place),
                time_on: {
                    // Places with the same CPUs (a one-core node and its core) count together.
                    let mut by_cpus: BTreeMap<String, u64> = BTreeMap::new();
                    for (place, periods) in &r.periods_on {
                        *by_cpus.entry(self.place_name(*place)).or_insert(0) += periods;
                    }
                    let mut shares: Vec<PlaceShare> = by_cpus
                        .into_iter()
                        .map(|(cpus, n)| PlaceShare {
                            cpus,
                            share: n as f64 / r.periods.max(1) as f64,
                        })
                        .collect();
                    shares.sort_by(|a, b| b.share.total_cmp(&a.share));
                    shares
                },
            })
            .collect()
    }

    fn place_name(&self, place: Option<usize>) -> String {
        place.map_or_else(|| "(own)".to_string(), |p| self.place_names[p].clone())
    }

    pub fn flush_trace(&mut self) -> Result<(), EngineError> {
        match self.trace.as_mut() {
            Some(t) => t.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pinlearn_policy::{OsPolicy, StaticPolicy};
    use pinlearn_topology::{CpuSet, Topology};

    /// Threads with fixed speeds; records every placement.
    struct FakeTarget {
        threads: Vec<(ThreadKey, Option<f64>)>,
        initial: Option<usize>,
        placed: Vec<(ThreadKey, usize)>,
        memory: Vec<(u32, usize)>,
        thread_memory: Vec<(ThreadKey, usize)>,
        /// Periods observed, and those after which measures restarted.
        observed: u64,
        afresh_after: Vec<u64>,
    }

    impl FakeTarget {
        /// A target of these threads (key, speed), placed nowhere yet.
        fn with(threads: Vec<(ThreadKey, Option<f64>)>) -> Self {
            FakeTarget {
                threads,
                initial: None,
                placed: Vec::new(),
                memory: Vec::new(),
                thread_memory: Vec::new(),
                observed: 0,
                afresh_after: Vec::new(),
            }
        }
    }

    impl Target for FakeTarget {
        fn observe(&mut self, samples: &mut Vec<ThreadSample>) -> Result<(), EngineError> {
            samples.extend(self.threads.iter().map(|&(key, speed)| ThreadSample::of(key, speed)));
            self.observed += 1;
            Ok(())
        }
        fn measure_afresh(&mut self) {
            self.afresh_after.push(self.observed);
        }
        fn place(&mut self, key: ThreadKey, place: usize, _cpus: &CpuSet) -> Result<bool, EngineError> {
            self.placed.push((key, place));
            Ok(true)
        }
        fn initial_place(&self, _key: ThreadKey) -> Option<usize> {
            self.initial
        }
        fn info(&self, key: ThreadKey) -> ThreadInfo {
            ThreadInfo {
                pid: 1,
                tid: key as u32,
                name: format!("t{key}"),
                ppid: 0,
            }
        }
        fn bind_memory(&mut self, pid: u32, node: usize) -> Result<bool, EngineError> {
            self.memory.push((pid, node));
            Ok(true)
        }
        fn move_thread_memory(&mut self, key: ThreadKey, node: usize) -> Result<bool, EngineError> {
            self.thread_memory.push((key, node));
            Ok(true)
        }
    }

    /// Puts every thread on `first` until period `switch_at`, then on `then`.
    struct SwitchingPolicy {
        first: usize,
        then: usize,
        switch_at: u64,
    }

    impl Policy for SwitchingPolicy {
        fn name(&self) -> String {
            "switching".into()
        }
        fn decide(&mut self, input: &PeriodInput<'_>) -> pinlearn_policy::Decision {
            let place = if input.period < self.switch_at {
                self.first
            } else {
                self.then
            };
            pinlearn_policy::Decision {
                place: vec![place; input.threads.len()],
                utility: vec![f64::NAN; input.threads.len()],
            }
        }
    }

    fn places() -> Places {
        Places::new(&Topology::from_synthetic("node:1 core:2 pu:1").expect("synthetic"))
    }

    /// One thread scored by `source` (changed between steps).
    struct ScoredTarget {
        source: &'static str,
    }

    impl Target for ScoredTarget {
        fn observe(&mut self, samples: &mut Vec<ThreadSample>) -> Result<(), EngineError> {
            samples.push(ThreadSample {
                key: 1,
                speed: Some(1.0),
                share: Some(1.0),
                grain_s: None,
                worked: None,
            });
            Ok(())
        }
        fn place(&mut self, _key: ThreadKey, _place: usize, _cpus: &CpuSet) -> Result<bool, EngineError> {
            Ok(true)
        }
        fn info(&self, key: ThreadKey) -> ThreadInfo {
            ThreadInfo {
                pid: 1,
                tid: key as u32,
                name: format!("t{key}"),
                ppid: 0,
            }
        }
        fn initial_place(&self, _key: ThreadKey) -> Option<usize> {
            None
        }
        fn scoring(&self, _key: ThreadKey) -> Option<crate::target::Scoring> {
            Some(crate::target::Scoring {
                source: self.source,
                waiting_share: None,
            })
        }
    }

    #[test]
    fn a_core_s_others_share_is_the_mean_of_its_cpus_told() {
        // Core places 0 (CPUs 0, 1), 1 (CPU 2), 2 (CPU 4); CPU 3 belongs to
        // no core of the program; places 3 and 4 are a node and the whole.
        let core_of_cpu = [Some(0), Some(0), Some(1), None, Some(2)];
        let by_cpu = [Some(0.2), Some(0.4), None, Some(0.9), Some(1.0), Some(0.5)];
        let mut out = vec![Some(7.0)];
        super::others_by_core(&by_cpu, &core_of_cpu, 5, &mut out);
        assert_eq!(out.len(), 5);
        assert!((out[0].unwrap() - 0.3).abs() < 1e-12, "{out:?}");
        assert_eq!(
            out[1..],
            [None, Some(1.0), None, None],
            "CPU 2 untold; CPUs 3 and 5 in no core"
        );
    }

    #[test]
    fn a_thread_s_source_is_the_one_that_scored_most_of_its_periods() {
        // Heartbeats for five periods, then run shares for the last two
        // (its program's channel went at exit while the thread still ran).
        let places = places();
        let mut engine = Engine::new(Box::new(OsPolicy::new(places.layout.clone())), places, 1, None);
        let mut target = ScoredTarget { source: "heartbeat" };
        for period in 0..7u64 {
            if period == 5 {
                target.source = "useful";
            }
            engine.step(&mut target, period as f64).expect("step");
        }
        assert_eq!(engine.thread_summaries()[0].source, Some("heartbeat"));
        // Ties go to the latest.
        for period in 7..10u64 {
            engine.step(&mut target, period as f64).expect("step");
        }
        assert_eq!(engine.thread_summaries()[0].source, Some("useful"));
    }

    #[test]
    fn ended_threads_beyond_the_listed_ones_are_counted_together() {
        let places = places();
        let mut engine = Engine::new(Box::new(StaticPolicy::new(places.layout.clone())), places, 1, None);
        let mut target = FakeTarget::with(Vec::new());
        // One long-lived thread, and two short ones each period (churn).
        let periods = 500u64;
        for period in 0..periods {
            target.threads = vec![
                (1, Some(1.0)),
                (10 + 2 * period, Some(0.5)),
                (11 + 2 * period, Some(0.5)),
            ];
            engine.step(&mut target, period as f64).expect("step");
        }
        let listed = engine.thread_summaries();
        // The live ones (3) and the first 64 that ended.
        assert_eq!(listed.len(), 3 + ENDED_LISTED);
        assert_eq!(engine.threads_seen(), 1 + 2 * periods as usize);
        let ended = engine
            .ended_not_listed()
            .expect("most ended threads are counted together");
        assert_eq!(ended.threads, 2 * periods - 2 - ENDED_LISTED as u64);
        assert_eq!(ended.periods, ended.threads, "each lived one period");
        assert_eq!(ended.mean_speed, Some(0.5));
        assert_eq!(engine.threads.len(), 3 + ENDED_LISTED, "memory stays bounded");
    }

    /// The static policy's engine with in-process bubbles declared through
    /// the returned handle, and a target whose threads `tids` run at full
    /// speed, placed nowhere yet.
    fn static_with_declared_bubbles(tids: &[ThreadKey]) -> (Engine, DeclaredBubbles, FakeTarget) {
        let places = places();
        let declared = DeclaredBubbles::new(None);
        let engine = Engine::new(Box::new(StaticPolicy::new(places.layout.clone())), places, 1, None)
            .with_declared_bubbles(declared.clone());
        let target = FakeTarget::with(tids.iter().map(|&tid| (tid, Some(1.0))).collect());
        (engine, declared, target)
    }

    #[test]
    fn a_thread_that_ends_leaves_its_bubble_and_its_declared_load() {
        let (mut engine, declared, mut target) = static_with_declared_bubbles(&[1, 2]);
        let bubble = declared.create(Some("work"), None).expect("create");
        for tid in [1, 2] {
            declared.insert_thread(bubble, tid).expect("insert");
            declared.set_thread_load(tid, Some(0.0)).expect("load");
        }
        engine.step(&mut target, 0.0).expect("step");
        assert_eq!(engine.load_of, vec![Some(0.0), Some(0.0)]);
        target.threads.truncate(1);
        engine.step(&mut target, 1.0).expect("step");
        let rules = declared.snapshot_since(u64::MAX).expect("a snapshot").rules;
        assert_eq!(rules.thread_load(1), Some(0.0), "the live thread keeps its load");
        assert_eq!(rules.thread_load(2), None, "the ended thread's load is dropped");
        declared
            .remove_thread(1)
            .expect("the live thread is still in its bubble");
        assert!(declared.remove_thread(2).is_err(), "the ended thread left its bubble");
        // The same thread id seen again is a new thread: measured, in no bubble.
        target.threads.push((2, Some(1.0)));
        engine.step(&mut target, 2.0).expect("step");
        assert_eq!(engine.load_of, vec![Some(0.0), None]);
    }

    #[test]
    fn a_thread_that_leaves_its_bubble_as_it_ends_is_summarised_in_it() {
        // The preload's thread tree takes a thread out of its bubble as it
        // ends; a period can see it still alive and in no bubble.
        let (mut engine, declared, mut target) = static_with_declared_bubbles(&[1]);
        let bubble = declared.create(Some("work"), None).expect("create");
        declared.insert_thread(bubble, 1).expect("insert");
        engine.step(&mut target, 0.0).expect("step");
        declared.remove_thread(1).expect("remove");
        engine.step(&mut target, 1.0).expect("step");
        let (_, now) = engine.placement();
        assert_eq!(now[0].bubble, None, "the status shows where it is now");
        assert_eq!(engine.thread_summaries()[0].bubble.as_deref(), Some("work"));
    }

    #[test]
    fn os_policy_never_pins_threads_already_on_the_whole_set() {
        let places = places();
        let whole = places.layout.whole();
        let mut engine = Engine::new(Box::new(OsPolicy::new(places.layout.clone())), places, 1, None);
        let mut target = FakeTarget {
            initial: Some(whole),
            ..FakeTarget::with(vec![(1, None), (2, None)])
        };
        for k in 0..5 {
            engine.step(&mut target, k as f64 * 0.05).unwrap();
        }
        assert!(target.placed.is_empty());
        assert_eq!(engine.repins(), 0);
        assert_eq!(engine.periods(), 5);
    }

    #[test]
    fn static_policy_pins_each_thread_once_and_new_threads_when_they_appear() {
        let places = places();
        let mut engine = Engine::new(Box::new(StaticPolicy::new(places.layout.clone())), places, 1, None);
        let mut target = FakeTarget::with(vec![(1, Some(1.0)), (2, Some(1.0))]);
        engine.step(&mut target, 0.0).unwrap();
        engine.step(&mut target, 0.05).unwrap();
        assert_eq!(target.placed, vec![(1, 0), (2, 1)]);
        target.threads.push((3, None));
        engine.step(&mut target, 0.1).unwrap();
        assert_eq!(target.placed.last(), Some(&(3, 0)));
        assert_eq!(engine.repins(), 3);
        let summaries = engine.thread_summaries();
        assert_eq!(summaries.len(), 3);
        assert_eq!(summaries[0].last_place, "0");
        assert_eq!(summaries[0].mean_speed, Some(1.0));
        assert_eq!(summaries[0].time_on[0].cpus, "0");
    }

    #[test]
    fn memory_follows_the_node_holding_a_share_of_the_threads_once_per_numa_period() {
        let places = Places::new(&Topology::from_synthetic("node:2 core:1 pu:1").expect("synthetic"));
        let layout = places.layout.clone();
        let mut engine = Engine::new(Box::new(StaticPolicy::new(layout)), places, 4, None).with_memory_binding(0.5);
        // Round-robin: threads 1 and 3 on node 0's core, thread 2 on node 1's.
        let threads = vec![(1, Some(1.0)), (2, Some(1.0)), (3, Some(1.0))];
        let mut target = FakeTarget::with(threads);
        for k in 0..12 {
            engine.step(&mut target, k as f64 * 0.05).unwrap();
        }
        assert_eq!(
            target.memory,
            vec![(1, 0)],
            "moved once, to node 0, at the first NUMA period"
        );
        assert_eq!(engine.memory_moves(), 1);
    }

    #[test]
    fn a_thread_s_memory_follows_it_once_it_stayed_the_given_periods_on_a_node() {
        let places = Places::new(&Topology::from_synthetic("node:2 core:2 pu:1").expect("synthetic"));
        let layout = places.layout.clone();
        let (core_0, core_2, machine) = (0, layout.cores_of(1).next().expect("a core"), layout.places().len() - 1);
        assert_eq!(layout.places()[core_2].node, Some(1));
        // Node 0's first core, then node 1's first core from period 12 on.
        let run = |policy: SwitchingPolicy, periods: u64| {
            let mut engine = Engine::new(Box::new(policy), places.clone(), 4, None).with_thread_memory(4);
            let mut target = FakeTarget::with(vec![(1, Some(1.0)), (2, Some(1.0))]);
            for k in 0..periods {
                engine.step(&mut target, k as f64 * 0.05).unwrap();
            }
            (target.thread_memory, engine.thread_memory_moves())
        };
        let two_stays = || SwitchingPolicy {
            first: core_0,
            then: core_2,
            switch_at: 12,
        };
        // Placed on core 0 at period 0, there 4 periods by period 4: asked
        // once per thread (the target says whether anything moved); on
        // node 1 from period 12: asked again at period 16, not before.
        assert_eq!(run(two_stays(), 16).0, vec![(1, 0), (2, 0)]);
        let (asked, moved) = run(two_stays(), 17);
        assert_eq!(asked, vec![(1, 0), (2, 0), (1, 1), (2, 1)]);
        assert_eq!(moved, 4);
        // A place across nodes (Linux's) never moves memory.
        let linux = SwitchingPolicy {
            first: machine,
            then: machine,
            switch_at: 0,
        };
        assert_eq!(run(linux, 30).0, vec![]);
        // Off unless asked for.
        let mut engine = Engine::new(Box::new(two_stays()), places.clone(), 4, None);
        let mut target = FakeTarget::with(vec![(1, Some(1.0))]);
        for k in 0..30 {
            engine.step(&mut target, k as f64 * 0.05).unwrap();
        }
        assert!(target.thread_memory.is_empty());
    }

    /// A guarded policy whose windows of `window` periods alternate: its
    /// own, every thread on `core`, then Linux's, every thread on `whole`.
    struct AlternatingPolicy {
        core: usize,
        whole: usize,
        window: u64,
        arm: Arm,
    }

    impl Policy for AlternatingPolicy {
        fn name(&self) -> String {
            "alternating".into()
        }
        fn guard_arm(&self) -> Option<Arm> {
            Some(self.arm)
        }
        fn decide(&mut self, input: &PeriodInput<'_>) -> pinlearn_policy::Decision {
            let linux = (input.period / self.window) % 2 == 1;
            self.arm = if linux { Arm::Os } else { Arm::Learn };
            let place = if linux { self.whole } else { self.core };
            pinlearn_policy::Decision {
                place: vec![place; input.threads.len()],
                utility: vec![f64::NAN; input.threads.len()],
            }
        }
    }

    #[test]
    fn a_stay_on_a_node_counts_the_policy_s_own_periods_across_linux_s_windows() {
        let places = Places::new(&Topology::from_synthetic("node:2 core:2 pu:1").expect("synthetic"));
        let layout = places.layout.clone();
        let (core_2, whole) = (layout.cores_of(1).next().expect("a core"), layout.places().len() - 1);
        let run = |periods: u64| {
            let policy = AlternatingPolicy {
                core: core_2,
                whole,
                window: 3,
                arm: Arm::Learn,
            };
            let mut engine = Engine::new(Box::new(policy), places.clone(), 4, None).with_thread_memory(4);
            let mut target = FakeTarget::with(vec![(1, Some(1.0))]);
            for k in 0..periods {
                engine.step(&mut target, k as f64 * 0.05).unwrap();
            }
            target.thread_memory
        };
        // The policy's periods 0-2 and 6-8 on node 1, Linux's 3-5 between:
        // the fifth of its own there (period 7) is 4 periods after it came.
        assert_eq!(run(7), vec![]);
        assert_eq!(run(8), vec![(1, 1)]);
        assert_eq!(run(30), vec![(1, 1)], "asked once per stay");
    }

    #[test]
    fn measures_restart_where_the_placement_changes_hands_and_nowhere_else() {
        let two_nodes = Places::new(&Topology::from_synthetic("node:2 core:2 pu:1").expect("synthetic"));
        let whole = two_nodes.layout.places().len() - 1;
        let policy = AlternatingPolicy {
            core: 0,
            whole,
            window: 3,
            arm: Arm::Learn,
        };
        let mut engine = Engine::new(Box::new(policy), two_nodes, 4, None);
        let mut target = FakeTarget::with(vec![(1, Some(1.0)), (2, Some(0.5))]);
        for k in 0..12 {
            engine.step(&mut target, k as f64 * 0.05).unwrap();
        }
        // The policy's periods 0-2, Linux's 3-5, its own 6-8, Linux's 9-11:
        // each switch is decided in the step of the period it starts
        // (steps 3, 6 and 9: the 4th, 7th and 10th observations).
        assert_eq!(target.afresh_after, vec![4, 7, 10]);

        // A policy without a guard never switches.
        let places = places();
        let mut engine = Engine::new(Box::new(StaticPolicy::new(places.layout.clone())), places, 1, None);
        let mut target = FakeTarget::with(vec![(1, Some(1.0))]);
        for k in 0..8 {
            engine.step(&mut target, k as f64 * 0.05).unwrap();
        }
        assert!(target.afresh_after.is_empty());
    }

    #[test]
    fn trace_has_the_documented_header_and_one_row_per_thread_per_period() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.csv");
        let places = places();
        let trace = Trace::create(&path).unwrap();
        let mut engine = Engine::new(
            Box::new(StaticPolicy::new(places.layout.clone())),
            places,
            1,
            Some(trace),
        );
        let mut target = FakeTarget::with(vec![(7, Some(0.5)), (9, None)]);
        for k in 0..3 {
            engine.step(&mut target, k as f64 * 0.05).unwrap();
        }
        engine.flush_trace().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some("time_s,period,pid,tid,name,place,speed,utility,bubble,waiting,share,grain_s,progress,arm,remote")
        );
        let rows: Vec<&str> = lines.collect();
        assert_eq!(rows.len(), 6);
        assert!(rows[0].starts_with("0.0000,0,1,7,t7,0,0.500000,"), "{}", rows[0]);
        assert!(rows[1].starts_with("0.0000,0,1,9,t9,1,,"), "{}", rows[1]);
        // Not sampled, no share or grain; the program's progress (the one
        // speed measured); no guard, no arm; memory's node not known.
        assert!(rows[1].ends_with(",,,,0.500000,,"), "{}", rows[1]);
    }

    /// The learner behind a guard with Linux first and windows of 3
    /// periods, its first probe right after Linux's first window.
    fn linux_first_in_windows_of_3() -> pinlearn_policy::LearnConfig {
        use pinlearn_policy::{Arm, GuardConfig, LearnConfig};
        LearnConfig {
            guard: GuardConfig {
                window: 3,
                assumed_loss: 0.0,
                first: Arm::Os,
                ..GuardConfig::default()
            },
            ..LearnConfig::default()
        }
    }

    #[test]
    fn the_trace_says_which_arm_of_the_guard_places_each_period() {
        use pinlearn_policy::LearnPolicy;
        // Linux first, the learner probed after Linux's first window:
        // windows of 3 periods.
        let cfg = linux_first_in_windows_of_3();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.csv");
        let places = places();
        let policy = LearnPolicy::new(places.layout.clone(), cfg, 1);
        let mut engine = Engine::new(Box::new(policy), places, 1, Some(Trace::create(&path).unwrap()));
        let mut target = FakeTarget::with(vec![(7, Some(0.5)), (9, Some(0.25))]);
        for k in 0..6 {
            engine.step(&mut target, k as f64 * 0.05).unwrap();
        }
        engine.flush_trace().unwrap();
        let mut reader = csv::Reader::from_path(&path).unwrap();
        let header = reader.headers().unwrap().clone();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let (period, progress, arm) = (col("period"), col("progress"), col("arm"));
        let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
        let arms: Vec<(String, String)> = rows
            .iter()
            .step_by(2)
            .map(|r| (r[period].to_string(), r[arm].to_string()))
            .collect();
        let expected = ["os", "os", "os", "learn", "learn", "learn"];
        assert_eq!(
            arms.iter().map(|(_, arm)| arm.as_str()).collect::<Vec<_>>(),
            expected,
            "{arms:?}"
        );
        // Both threads' rows of a period carry the program's progress: the
        // sum of their speeds.
        assert!(rows.iter().all(|r| r[progress] == *"0.750000"), "{rows:?}");
    }

    /// A target whose threads' memory is 40% away while they are on the
    /// whole machine (Linux places them) and all local once pinned.
    struct MemoryTarget {
        inner: FakeTarget,
        pinned: bool,
    }

    impl Target for MemoryTarget {
        fn observe(&mut self, samples: &mut Vec<ThreadSample>) -> Result<(), EngineError> {
            self.inner.observe(samples)
        }
        fn place(&mut self, key: ThreadKey, place: usize, cpus: &CpuSet) -> Result<bool, EngineError> {
            self.pinned = place != places().layout.whole();
            self.inner.place(key, place, cpus)
        }
        fn initial_place(&self, key: ThreadKey) -> Option<usize> {
            self.inner.initial_place(key)
        }
        fn info(&self, key: ThreadKey) -> ThreadInfo {
            self.inner.info(key)
        }
        fn remote(&self) -> Option<f64> {
            Some(if self.pinned { 0.0 } else { 0.4 })
        }
    }

    #[test]
    fn the_memory_away_from_the_threads_is_summed_per_arm_of_the_guard() {
        use pinlearn_policy::LearnPolicy;
        // Linux's window of 3 periods, then the learner's probe of 3.
        let cfg = linux_first_in_windows_of_3();
        let places = places();
        let policy = LearnPolicy::new(places.layout.clone(), cfg, 1);
        let mut engine = Engine::new(Box::new(policy), places, 1, None);
        let mut target = MemoryTarget {
            inner: FakeTarget::with(vec![(7, Some(0.5)), (9, Some(0.25))]),
            pinned: false,
        };
        for k in 0..7 {
            engine.step(&mut target, k as f64 * 0.05).unwrap();
        }
        // Periods 1-3 measured what Linux placed, 4-6 the learner's pins;
        // period 0 was placed by nobody yet.
        let remote = engine.remote_share().expect("the target told");
        assert!(remote.os.is_some_and(|os| (os - 0.4).abs() < 1e-12), "{remote:?}");
        assert_eq!(remote.learn, Some(0.0), "{remote:?}");
        assert!((remote.mean - 0.4 * 4.0 / 7.0).abs() < 1e-12, "{remote:?}");
        // A target that cannot tell: nothing.
        let places = super::tests::places();
        let mut engine = Engine::new(Box::new(OsPolicy::new(places.layout.clone())), places, 1, None);
        engine.step(&mut FakeTarget::with(vec![(7, Some(0.5))]), 0.0).unwrap();
        assert_eq!(engine.remote_share(), None);
    }

    #[test]
    fn bubble_rules_name_each_thread_s_bubble_in_the_trace_and_summary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.csv");
        let places = places();
        let rules =
            crate::bubbles::BubbleRules::parse("[[bubble]]\nname = \"pair\"\nthreads = \"^t[79]$\"\n", "r.toml")
                .unwrap();
        let policy = pinlearn_policy::BubblesPolicy::new(
            places.layout.clone(),
            places.tree(),
            pinlearn_policy::GuardConfig {
                enabled: false,
                ..Default::default()
            },
        );
        let mut engine =
            Engine::new(Box::new(policy), places, 1, Some(Trace::create(&path).unwrap())).with_bubbles(rules);
        let mut target = FakeTarget::with(vec![(7, Some(0.5)), (9, Some(0.5))]);
        for k in 0..2 {
            engine.step(&mut target, k as f64 * 0.05).unwrap();
        }
        engine.flush_trace().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let rows: Vec<&str> = text.lines().skip(1).collect();
        assert!(rows.iter().all(|r| r.split(',').nth(8) == Some("pair")), "{rows:?}");
        // The bubble of two opens over the two cores: one thread on each.
        let last: Vec<&str> = rows[2..].iter().map(|r| r.split(',').nth(5).unwrap()).collect();
        assert_ne!(last[0], last[1], "{rows:?}");
        let summaries = engine.thread_summaries();
        assert!(summaries.iter().all(|t| t.bubble.as_deref() == Some("pair")));
    }
}
