//! A pipeline of stages with unequal work, connected by bounded queues: the
//! case where the slowest stage sets the pace and a scheduler that gives it
//! the most CPU wins.
//!
//! ```text
//!   threads "pipe-0-k"            "pipe-1-k"              "pipe-2-k"
//!   claim item ids ─► work x2 ─► [queue 0] ─► work x1 ─► [queue 1] ─► work x1 ─► fold into checksum,
//!   (atomic counter)              bounded, capacity 64                            mark the item seen
//!
//!   every stage: check the item has passed exactly the stages before it, mix its
//!   payload weight x rounds times, work_done(1), pass it on
//! ```
//!
//! # What it models
//!
//! Stream-processing applications (video encoders, packet chains, the
//! pipelines of TBB/FastFlow) whose stages cost different amounts: with one
//! thread per stage, the heaviest stage's thread is the bottleneck and the
//! others spend their time waiting on empty or full queues. How they wait is
//! `--queue`: `block` sleeps on a condition variable, `spin` busy-waits (the
//! waiting thread stays runnable and looks busy), `spin-then-block` spins for
//! `--spin` (a duration, default 200us) first.
//!
//! Each item is 64 bytes of payload generated from `--seed` and its id. A
//! stage of weight w applies w x `--rounds` rounds of a 64-bit mixing function
//! (the splitmix64 finaliser) to every word, so its cost is real computation
//! proportional to w. The last stage folds each item into a wrapping-sum
//! checksum, which the tests compare with the same computation done
//! sequentially; a run also fails if any item was lost, duplicated or skipped
//! a stage.
//!
//! # Threads
//!
//! One thread per stage, or `--threads` if that is more: each extra thread
//! goes to the stage whose load per thread (weight / threads) is highest at
//! that point, ties to the earlier stage, which minimises the bottleneck
//! stage's load per thread. Threads of one stage share its input and output
//! queues (items may leave a stage out of order; the checksum does not depend
//! on order). Thread `k` of stage `s` is named `pipe-s-k`.
//!
//! # Options
//!
//! `--stages 2,1,1` (weights, positive integers), `--queue block|spin|spin-then-block`,
//! `--spin 200us`, `--items 600000`, `--capacity 64` (items per queue),
//! `--rounds 256` (mixing rounds per unit of weight). Scale up with `--items`.
//! The default takes about 3 s with blocking queues on 2 cores; with
//! `--queue spin` and more threads than cores it takes many times longer,
//! because a spinning thread holds its core until the kernel preempts it.

use crate::barrier::SyncMode;
use crate::common::{Common, WorkError};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Options of the pipeline workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Relative work of each stage, comma-separated
    pub stages: Vec<u32>,
    /// How a stage waits on an empty input or a full output queue
    pub queue: SyncMode,
    /// How long a thread spins before blocking, with `SyncMode::SpinThenBlock`
    pub spin: Duration,
    /// Items pushed through the pipeline
    pub items: u64,
    /// Capacity of each queue between two stages, in items
    pub capacity: usize,
    /// Mixing rounds applied to each item per unit of stage weight
    pub rounds: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            stages: vec![2, 1, 1],
            queue: SyncMode::Block,
            spin: Duration::from_micros(200),
            items: 600_000,
            capacity: 64,
            rounds: 256,
        }
    }
}

/// What a pipeline run did.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Report {
    /// Stage weights.
    pub stages: Vec<u32>,
    /// Threads given to each stage.
    pub stage_threads: Vec<usize>,
    /// Threads in all stages.
    pub threads: usize,
    pub queue: SyncMode,
    pub capacity: usize,
    pub rounds: u32,
    pub items: u64,
    pub items_per_s: f64,
    /// Wrapping sum over items of the hash of their final payload.
    pub checksum: u64,
}

/// Words of payload per item (64 bytes).
const WORDS: usize = 8;

/// One unit of work flowing through the stages.
#[derive(Debug, Clone)]
struct Item {
    id: u64,
    /// Stages this item has been through.
    stages_done: u32,
    payload: [u64; WORDS],
}

/// The splitmix64 finaliser: a cheap, well-mixing bijection on 64-bit words.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl Item {
    fn new(seed: u64, id: u64) -> Item {
        let mut payload = [0; WORDS];
        let mut state = mix(seed ^ mix(id.wrapping_add(0x9E37_79B9_7F4A_7C15)));
        for word in &mut payload {
            state = mix(state.wrapping_add(0x9E37_79B9_7F4A_7C15));
            *word = state;
        }
        Item {
            id,
            stages_done: 0,
            payload,
        }
    }

    /// The work of stage `stage`: `rounds` rounds of mixing every word.
    fn process(&mut self, stage: usize, rounds: u64) {
        let salt = mix(stage as u64 + 1);
        for _ in 0..rounds {
            for k in 0..WORDS {
                self.payload[k] = mix(self.payload[k] ^ salt ^ self.payload[(k + 1) % WORDS]);
            }
        }
        self.stages_done += 1;
    }

    /// This item's contribution to the checksum.
    fn hash(&self) -> u64 {
        self.payload.iter().fold(mix(self.id), |h, &word| mix(h ^ word))
    }
}

/// What a non-blocking pop found.
enum TryPop {
    Item(Item),
    Empty,
    /// Empty, and every producer has finished.
    Closed,
}

struct QueueState {
    items: VecDeque<Item>,
    open_producers: usize,
    waiting_pop: usize,
    waiting_push: usize,
}

/// A bounded multi-producer multi-consumer queue whose waiting is set by a
/// [`SyncMode`]. `len` and `closed` mirror the locked state so that spinning
/// threads poll them without taking the lock.
struct Queue {
    state: Mutex<QueueState>,
    not_empty: Condvar,
    not_full: Condvar,
    len: AtomicUsize,
    closed: AtomicBool,
    capacity: usize,
    mode: SyncMode,
    spin_for: Duration,
}

impl Queue {
    fn new(capacity: usize, producers: usize, mode: SyncMode, spin_for: Duration) -> Queue {
        Queue {
            state: Mutex::new(QueueState {
                items: VecDeque::with_capacity(capacity),
                open_producers: producers,
                waiting_pop: 0,
                waiting_push: 0,
            }),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
            len: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            capacity,
            mode,
            spin_for,
        }
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `item` under the lock, room permitting; wakes a sleeping consumer.
    fn push_locked(&self, state: &mut QueueState, item: Item) {
        state.items.push_back(item);
        self.len.store(state.items.len(), Ordering::Release);
        if state.waiting_pop > 0 {
            self.not_empty.notify_one();
        }
    }

    /// Takes the first item under the lock; wakes a sleeping producer.
    fn pop_locked(&self, state: &mut QueueState) -> Option<Item> {
        let item = state.items.pop_front()?;
        self.len.store(state.items.len(), Ordering::Release);
        if state.waiting_push > 0 {
            self.not_full.notify_one();
        }
        Some(item)
    }

    fn try_push(&self, item: Item) -> Result<(), Item> {
        if self.len.load(Ordering::Acquire) >= self.capacity {
            return Err(item);
        }
        let mut state = self.lock();
        if state.items.len() >= self.capacity {
            return Err(item);
        }
        self.push_locked(&mut state, item);
        Ok(())
    }

    fn try_pop(&self) -> TryPop {
        if self.len.load(Ordering::Acquire) == 0 && !self.closed.load(Ordering::Acquire) {
            return TryPop::Empty;
        }
        let mut state = self.lock();
        match self.pop_locked(&mut state) {
            Some(item) => TryPop::Item(item),
            None if state.open_producers == 0 => TryPop::Closed,
            None => TryPop::Empty,
        }
    }

    /// Adds `item`, waiting for room as the queue's mode says.
    fn push(&self, mut item: Item) {
        let spin_until = match self.mode {
            SyncMode::Block => None,
            SyncMode::Spin => Some(None),
            SyncMode::SpinThenBlock => Some(Some(Instant::now() + self.spin_for)),
        };
        if let Some(deadline) = spin_until {
            loop {
                match self.try_push(item) {
                    Ok(()) => return,
                    Err(back) => item = back,
                }
                if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                    break;
                }
                std::hint::spin_loop();
            }
        }
        let mut state = self.lock();
        while state.items.len() >= self.capacity {
            state.waiting_push += 1;
            state = self.not_full.wait(state).unwrap_or_else(PoisonError::into_inner);
            state.waiting_push -= 1;
        }
        self.push_locked(&mut state, item);
    }

    /// Takes the next item, waiting as the queue's mode says; `None` once the
    /// queue is empty and all its producers have finished.
    fn pop(&self) -> Option<Item> {
        let spin_until = match self.mode {
            SyncMode::Block => None,
            SyncMode::Spin => Some(None),
            SyncMode::SpinThenBlock => Some(Some(Instant::now() + self.spin_for)),
        };
        if let Some(deadline) = spin_until {
            loop {
                match self.try_pop() {
                    TryPop::Item(item) => return Some(item),
                    TryPop::Closed => return None,
                    TryPop::Empty => {}
                }
                if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                    break;
                }
                std::hint::spin_loop();
            }
        }
        let mut state = self.lock();
        loop {
            if let Some(item) = self.pop_locked(&mut state) {
                return Some(item);
            }
            if state.open_producers == 0 {
                return None;
            }
            state.waiting_pop += 1;
            state = self.not_empty.wait(state).unwrap_or_else(PoisonError::into_inner);
            state.waiting_pop -= 1;
        }
    }

    /// One producer has pushed its last item.
    fn producer_done(&self) {
        let mut state = self.lock();
        state.open_producers -= 1;
        if state.open_producers == 0 {
            self.closed.store(true, Ordering::Release);
            self.not_empty.notify_all();
        }
    }
}

/// Threads per stage: one each, then every extra thread to the stage with the
/// highest weight per thread (ties to the earlier stage).
fn threads_per_stage(weights: &[u32], threads: usize) -> Vec<usize> {
    let mut counts = vec![1usize; weights.len()];
    for _ in weights.len()..threads {
        let load = |s: usize| f64::from(weights[s]) / counts[s] as f64;
        let busiest = (0..weights.len()).fold(0, |best, s| if load(s) > load(best) { s } else { best });
        counts[busiest] += 1;
    }
    counts
}

/// What the last stage's threads saw.
struct Sink {
    checksum: AtomicU64,
    /// One bit per item id: set when the item left the last stage.
    seen: Vec<AtomicU64>,
    duplicates: AtomicU64,
    misrouted: AtomicU64,
}

/// Pushes `opts.items` items through the stages; returns the checksum and the
/// thread split, or an error if an item was lost, duplicated or misrouted.
fn run_stages(opts: &Options, common: &Common) -> Result<(u64, Vec<usize>), WorkError> {
    let stages = opts.stages.len();
    let stage_threads = threads_per_stage(&opts.stages, common.threads.max(stages));
    let roles: Vec<(usize, usize)> = stage_threads
        .iter()
        .enumerate()
        .flat_map(|(stage, &count)| (0..count).map(move |k| (stage, k)))
        .collect();
    let names: Vec<String> = roles.iter().map(|(stage, k)| format!("pipe-{stage}-{k}")).collect();
    let spin_for = opts.spin;
    // queues[s] carries items from stage s to stage s + 1.
    let queues: Vec<Queue> = (0..stages - 1)
        .map(|s| Queue::new(opts.capacity, stage_threads[s], opts.queue, spin_for))
        .collect();
    let next_id = AtomicU64::new(0);
    let sink = Sink {
        checksum: AtomicU64::new(0),
        seen: (0..opts.items.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
        duplicates: AtomicU64::new(0),
        misrouted: AtomicU64::new(0),
    };
    common.spawn_named_workers(&names, |thread| {
        let (stage, _) = roles[thread];
        let rounds = u64::from(opts.stages[stage]) * u64::from(opts.rounds);
        let mut checksum = 0u64;
        loop {
            let mut item = if stage == 0 {
                let id = next_id.fetch_add(1, Ordering::Relaxed);
                if id >= opts.items {
                    break;
                }
                Item::new(common.seed, id)
            } else {
                match queues[stage - 1].pop() {
                    Some(item) => item,
                    None => break,
                }
            };
            if item.stages_done != stage as u32 {
                sink.misrouted.fetch_add(1, Ordering::Relaxed);
            }
            item.process(stage, rounds);
            common.work_done(1);
            if stage + 1 < stages {
                queues[stage].push(item);
            } else {
                checksum = checksum.wrapping_add(item.hash());
                let bit = 1u64 << (item.id % 64);
                if sink.seen[(item.id / 64) as usize].fetch_or(bit, Ordering::Relaxed) & bit != 0 {
                    sink.duplicates.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if stage + 1 < stages {
            queues[stage].producer_done();
        } else {
            sink.checksum.fetch_add(checksum, Ordering::Relaxed);
        }
    })?;
    let delivered: u64 = sink
        .seen
        .iter()
        .map(|word| u64::from(word.load(Ordering::Relaxed).count_ones()))
        .sum();
    let (duplicates, misrouted) = (sink.duplicates.into_inner(), sink.misrouted.into_inner());
    if delivered != opts.items || duplicates != 0 || misrouted != 0 {
        return Err(WorkError::WrongResult(format!(
            "pipeline delivered {delivered} of {} items, {duplicates} twice, {misrouted} out of stage order",
            opts.items
        )));
    }
    Ok((sink.checksum.into_inner(), stage_threads))
}

/// Runs the pipeline workload.
pub fn run(opts: &Options, common: &Common) -> Result<Report, WorkError> {
    if opts.stages.is_empty() || opts.stages.contains(&0) {
        return Err(WorkError::BadInput(
            "--stages needs one or more positive weights, e.g. 2,1,1".into(),
        ));
    }
    if opts.capacity == 0 || opts.items == 0 || opts.rounds == 0 {
        return Err(WorkError::BadInput(
            "--capacity, --items and --rounds must be at least 1".into(),
        ));
    }
    common.start(
        "pipeline: items through all stages",
        opts.items.saturating_mul(opts.stages.len() as u64),
    );
    let started = Instant::now();
    let (checksum, stage_threads) = run_stages(opts, common)?;
    let elapsed = started.elapsed().as_secs_f64();
    common.finish();
    Ok(Report {
        stages: opts.stages.clone(),
        threads: stage_threads.iter().sum(),
        stage_threads,
        queue: opts.queue,
        capacity: opts.capacity,
        rounds: opts.rounds,
        items: opts.items,
        items_per_s: opts.items as f64 / elapsed,
        checksum,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(stages: &[u32], queue: SyncMode, items: u64, capacity: usize) -> Options {
        Options {
            stages: stages.to_vec(),
            queue,
            spin: Duration::from_micros(20),
            items,
            capacity,
            rounds: 3,
        }
    }

    fn sequential_checksum(opts: &Options, seed: u64) -> u64 {
        (0..opts.items).fold(0u64, |sum, id| {
            let mut item = Item::new(seed, id);
            for (stage, &weight) in opts.stages.iter().enumerate() {
                item.process(stage, u64::from(weight) * u64::from(opts.rounds));
            }
            sum.wrapping_add(item.hash())
        })
    }

    #[test]
    fn checksum_matches_sequential_computation_in_every_queue_mode() {
        for queue in [SyncMode::Block, SyncMode::Spin, SyncMode::SpinThenBlock] {
            for (stages, threads, capacity) in [(&[2, 1, 1][..], 3, 64), (&[1, 3, 2][..], 5, 2), (&[1][..], 2, 4)] {
                let opts = options(stages, queue, 700, capacity);
                let common = Common::new(threads, 9, true).expect("valid settings");
                let report = run(&opts, &common).expect("pipeline runs");
                assert_eq!(
                    report.checksum,
                    sequential_checksum(&opts, 9),
                    "{queue:?} {stages:?} x{threads}"
                );
                assert_eq!(report.items, 700);
                assert_eq!(report.threads, threads.max(stages.len()));
            }
        }
    }

    #[test]
    fn checksum_depends_on_seed_and_work() {
        let opts = options(&[2, 1], SyncMode::Block, 50, 8);
        assert_ne!(sequential_checksum(&opts, 1), sequential_checksum(&opts, 2));
        let heavier = Options {
            rounds: 4,
            ..opts.clone()
        };
        assert_ne!(sequential_checksum(&opts, 1), sequential_checksum(&heavier, 1));
    }

    #[test]
    fn extra_threads_go_to_the_busiest_stage() {
        assert_eq!(threads_per_stage(&[2, 1, 1], 2), vec![1, 1, 1]);
        assert_eq!(threads_per_stage(&[2, 1, 1], 3), vec![1, 1, 1]);
        assert_eq!(threads_per_stage(&[2, 1, 1], 4), vec![2, 1, 1]);
        assert_eq!(threads_per_stage(&[2, 1, 1], 5), vec![3, 1, 1]);
        assert_eq!(threads_per_stage(&[2, 1, 1], 8), vec![4, 2, 2]);
        assert_eq!(threads_per_stage(&[1, 4], 5), vec![1, 4]);
    }

    #[test]
    fn bad_options_are_rejected() {
        let common = Common::new(2, 1, true).expect("valid settings");
        for opts in [
            options(&[], SyncMode::Block, 10, 4),
            options(&[1, 0], SyncMode::Block, 10, 4),
            options(&[1], SyncMode::Block, 0, 4),
            options(&[1], SyncMode::Block, 10, 0),
        ] {
            assert!(matches!(run(&opts, &common), Err(WorkError::BadInput(_))), "{opts:?}");
        }
    }

    #[test]
    fn defaults_are_three_unequal_stages() {
        let defaults = Options::default();
        assert_eq!((defaults.stages, defaults.capacity), (vec![2, 1, 1], 64));
    }
}
