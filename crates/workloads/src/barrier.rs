//! The synchronisation primitive of the iterative workloads: a reusable
//! barrier whose waiting threads block, busy-wait, or busy-wait then block.
//!
//! How threads wait is what makes a parallel program easy or hard for a
//! scheduler: a blocked thread gives its core away, a spinning thread keeps it
//! and looks busy (instructions per second rise while nothing progresses).
//! OpenMP runtimes spin for a while before sleeping (`OMP_WAIT_POLICY`,
//! `GOMP_SPINCOUNT`); the three [`SyncMode`]s model the three policies.
//!
//! ```text
//!   wait(): g = generation; n = arrived.fetch_add(1) + 1
//!     n == parties (the leader) ─► arrived = 0, generation = g + 1, wake sleepers ─► return true
//!     otherwise, until generation != g:
//!       Spin            spin_loop() forever
//!       SpinThenBlock   spin_loop() for spin_for, then as Block
//!       Block           sleep on the condvar (sleepers += 1 first, so the leader knows to wake)
//!     ─► return false
//! ```

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How a thread waits for the others at a barrier (or for a queue).
#[derive(serde::Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SyncMode {
    /// Sleep in the kernel until released (Mutex + Condvar, a futex).
    Block,
    /// Busy-wait on an atomic generation counter (OpenMP's active wait).
    Spin,
    /// Busy-wait for a while (`--spin`), then sleep.
    SpinThenBlock,
}

impl SyncMode {
    pub const ALL: [SyncMode; 3] = [SyncMode::Block, SyncMode::Spin, SyncMode::SpinThenBlock];

    /// The word for the mode on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SyncMode::Block => "block",
            SyncMode::Spin => "spin",
            SyncMode::SpinThenBlock => "spin-then-block",
        }
    }
}

impl std::str::FromStr for SyncMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        SyncMode::ALL
            .into_iter()
            .find(|m| m.name() == text)
            .ok_or_else(|| format!("unknown wait mode {text:?}: use block, spin or spin-then-block"))
    }
}

/// A reusable barrier for a fixed number of threads.
pub struct Barrier {
    parties: usize,
    mode: SyncMode,
    spin_for: Duration,
    arrived: AtomicUsize,
    generation: AtomicU64,
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    released: Condvar,
}

impl Barrier {
    /// A barrier for `parties` threads (at least 1). `spin_for` is how long a
    /// thread spins before sleeping in [`SyncMode::SpinThenBlock`]; the other
    /// modes ignore it.
    pub fn new(parties: usize, mode: SyncMode, spin_for: Duration) -> Barrier {
        Barrier {
            parties: parties.max(1),
            mode,
            spin_for,
            arrived: AtomicUsize::new(0),
            generation: AtomicU64::new(0),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            released: Condvar::new(),
        }
    }

    /// Waits until all parties have called `wait` for this round. Returns
    /// `true` on exactly one thread per round (the last to arrive).
    pub fn wait(&self) -> bool {
        // Read the generation before arriving: once this thread arrives, the
        // leader may already have moved it on.
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.store(generation.wrapping_add(1), Ordering::SeqCst);
            if self.sleepers.load(Ordering::SeqCst) > 0 {
                // Taking the lock orders this wake-up after any sleeper's
                // check of the generation: none can miss it.
                let _guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
                self.released.notify_all();
            }
            return true;
        }
        let released = || self.generation.load(Ordering::Acquire) != generation;
        match self.mode {
            SyncMode::Spin => {
                while !released() {
                    std::hint::spin_loop();
                }
            }
            SyncMode::SpinThenBlock => {
                if !self.spin(&released) {
                    self.block(generation);
                }
            }
            SyncMode::Block => self.block(generation),
        }
        false
    }

    /// Spins until `released` or `spin_for` has passed; says whether released.
    fn spin(&self, released: &impl Fn() -> bool) -> bool {
        let start = Instant::now();
        loop {
            for _ in 0..64 {
                if released() {
                    return true;
                }
                std::hint::spin_loop();
            }
            if start.elapsed() >= self.spin_for {
                return released();
            }
        }
    }

    fn block(&self, generation: u64) {
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let mut guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        while self.generation.load(Ordering::SeqCst) == generation {
            guard = self.released.wait(guard).unwrap_or_else(PoisonError::into_inner);
        }
        drop(guard);
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every round each thread writes its round number, waits, and checks that
    /// every other thread has reached this round (and not gone past the next).
    fn check_rounds(threads: usize, rounds: usize, mode: SyncMode, spin_for: Duration) {
        let barrier = Barrier::new(threads, mode, spin_for);
        let reached: Vec<AtomicUsize> = (0..threads).map(|_| AtomicUsize::new(0)).collect();
        let leaders = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for me in 0..threads {
                let (barrier, reached, leaders) = (&barrier, &reached, &leaders);
                scope.spawn(move || {
                    for round in 1..=rounds {
                        reached[me].store(round, Ordering::SeqCst);
                        if barrier.wait() {
                            leaders.fetch_add(1, Ordering::SeqCst);
                        }
                        for (other, slot) in reached.iter().enumerate() {
                            let theirs = slot.load(Ordering::SeqCst);
                            assert!(
                                theirs == round || theirs == round + 1,
                                "{mode:?}: thread {me} left round {round} while thread {other} was at {theirs}"
                            );
                        }
                    }
                });
            }
        });
        assert_eq!(leaders.load(Ordering::SeqCst), rounds, "{mode:?}: one leader per round");
    }

    #[test]
    fn blocking_barrier_holds_every_round() {
        check_rounds(8, 2000, SyncMode::Block, Duration::ZERO);
    }

    #[test]
    fn spinning_barrier_holds_every_round() {
        // More threads than this machine's cores: spinners must still see progress.
        check_rounds(4, 300, SyncMode::Spin, Duration::ZERO);
    }

    #[test]
    fn spin_then_block_barrier_holds_every_round() {
        check_rounds(6, 1000, SyncMode::SpinThenBlock, Duration::from_micros(50));
        check_rounds(3, 1000, SyncMode::SpinThenBlock, Duration::ZERO);
    }

    #[test]
    fn single_party_never_waits() {
        let barrier = Barrier::new(1, SyncMode::Block, Duration::ZERO);
        assert!((0..10).all(|_| barrier.wait()));
    }
}
