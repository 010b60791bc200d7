//! sched_setaffinity per thread id, and putting every mask back.
//!
//! ```text
//!   set(tid, cpus) ──first change of tid──► remember its original mask
//!                  └──────────────────────► sched_setaffinity(tid, cpus)
//!   restore_all() / Drop ──► sched_setaffinity(tid, original) for every
//!                            changed thread still alive (ESRCH is fine)
//! ```
//!
//! Masks are sized to the largest CPU number instead of glibc's fixed
//! 1024-bit `cpu_set_t` (which `nix::sched::CpuSet` wraps), so machines with
//! more CPUs work; that is why this calls libc directly.

use super::journal::Journal;
use pinlearn_topology::CpuSet;
use std::collections::HashMap;
use std::io;

const WORD_BITS: usize = u64::BITS as usize;

/// Reads the affinity mask of thread `tid` (0 = the calling thread).
pub fn get_affinity(tid: u32) -> io::Result<CpuSet> {
    let mut words = [0u64; 8192 / WORD_BITS];
    // SAFETY: the buffer is valid for its full byte length.
    let ret = unsafe {
        libc::sched_getaffinity(
            tid as libc::pid_t,
            words.len() * 8,
            words.as_mut_ptr().cast::<libc::cpu_set_t>(),
        )
    };
    if ret != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(CpuSet::from_words(&words))
}

/// Restricts thread `tid` to `cpus`.
pub fn set_affinity(tid: u32, cpus: &CpuSet) -> io::Result<()> {
    AffinityMask::new(cpus)?.apply(tid)
}

/// A CPU set as the kernel's affinity mask, built ahead of the system call
/// so it can be applied where allocating is not allowed (between fork and
/// exec).
#[derive(Clone, Debug)]
pub struct AffinityMask {
    words: Vec<u64>,
}

impl AffinityMask {
    /// The mask of `cpus`; an empty set is refused (`InvalidInput`).
    pub fn new(cpus: &CpuSet) -> io::Result<Self> {
        let highest = cpus
            .iter()
            .last()
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        let mut words = vec![0u64; highest / WORD_BITS + 1];
        for cpu in cpus.iter() {
            words[cpu / WORD_BITS] |= 1u64 << (cpu % WORD_BITS);
        }
        Ok(AffinityMask { words })
    }

    /// Restricts thread `tid` (0 = the calling thread) to the mask: one
    /// system call, no allocation.
    pub fn apply(&self, tid: u32) -> io::Result<()> {
        // SAFETY: the mask is valid for its full byte length.
        let ret = unsafe {
            libc::sched_setaffinity(
                tid as libc::pid_t,
                self.words.len() * 8,
                self.words.as_ptr().cast::<libc::cpu_set_t>(),
            )
        };
        if ret != 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

fn is_gone(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ESRCH)
}

/// The masks pinlearn changed, so they can be put back, each written to
/// the journal (when there is one) before the change.
#[derive(Default)]
pub struct Affinity {
    originals: HashMap<u32, CpuSet>,
    journal: Option<Journal>,
}

impl Affinity {
    /// Moves `tid` to `cpus`, remembering `original` the first time.
    /// `Ok(false)` when the thread no longer exists.
    pub fn set(&mut self, tid: u32, original: &CpuSet, cpus: &CpuSet) -> io::Result<bool> {
        if !self.originals.contains_key(&tid)
            && let Some(journal) = &mut self.journal
        {
            journal.record(tid, original)?;
        }
        match set_affinity(tid, cpus) {
            Ok(()) => {
                self.originals.entry(tid).or_insert_with(|| original.clone());
                Ok(true)
            }
            Err(e) if is_gone(&e) => {
                self.originals.remove(&tid);
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Remembers `original` for a thread that runs on a mask of pinlearn's
    /// without pinlearn having set it (it inherited its creator's pin), so
    /// that restoring puts `original` back.
    pub fn adopt(&mut self, tid: u32, original: &CpuSet) -> io::Result<()> {
        if !self.originals.contains_key(&tid)
            && let Some(journal) = &mut self.journal
        {
            journal.record(tid, original)?;
        }
        self.originals.entry(tid).or_insert_with(|| original.clone());
        Ok(())
    }

    /// Puts back the original mask of `tid` now, if pinlearn changed it
    /// (the thread then counts as unchanged).
    pub fn put_back(&mut self, tid: u32) -> io::Result<()> {
        let Some(original) = self.originals.get(&tid) else {
            return Ok(());
        };
        match set_affinity(tid, original) {
            Ok(()) => {
                self.release(tid);
                Ok(())
            }
            Err(e) if is_gone(&e) => {
                self.originals.remove(&tid);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Stops answering for the mask of `tid`: it is not restored at the
    /// end (its program chose its mask, or it has its original back). The
    /// journal says so too.
    pub fn release(&mut self, tid: u32) {
        if self.originals.remove(&tid).is_some()
            && let Some(journal) = &mut self.journal
        {
            // A journal that cannot say so restores this thread to its
            // original after a crash: the lesser harm.
            let _ = journal.forget(tid);
        }
    }

    /// Writes every original mask to `journal` before changing it.
    pub fn with_journal(mut self, journal: Journal) -> Self {
        self.journal = Some(journal);
        self
    }

    /// Forgets a thread that has ended.
    pub fn forget(&mut self, tid: u32) {
        self.originals.remove(&tid);
    }

    /// Number of threads whose mask pinlearn changed and has not restored.
    pub fn changed(&self) -> usize {
        self.originals.len()
    }

    /// Puts back every changed mask of a thread still alive. Returns the
    /// threads that could not be restored (other than ended ones).
    pub fn restore_all(&mut self) -> Vec<(u32, io::Error)> {
        let mut failures = Vec::new();
        for (tid, original) in self.originals.drain() {
            if let Err(e) = set_affinity(tid, &original)
                && !is_gone(&e)
            {
                failures.push((tid, e));
            }
        }
        // With every mask back the journal has served; with a failure it
        // stays for `pinlearn restore`.
        if failures.is_empty()
            && let Some(journal) = self.journal.take()
        {
            let path = journal.path().to_path_buf();
            if let Err(e) = journal.finish() {
                eprintln!("pinlearn: could not remove the journal {}: {e}", path.display());
            }
        }
        failures
    }
}

impl Drop for Affinity {
    fn drop(&mut self) {
        for (tid, e) in self.restore_all() {
            eprintln!("pinlearn: could not restore the affinity of thread {tid}: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_then_restore_puts_the_original_mask_back() {
        let worker = super::super::test_thread::ParkedThread::start();
        let tid = worker.tid;
        let original = get_affinity(tid).unwrap();
        let first = CpuSet::from_iter([original.iter().next().unwrap()]);
        let mut affinity = Affinity::default();
        assert!(affinity.set(tid, &original, &first).unwrap());
        assert_eq!(get_affinity(tid).unwrap(), first);
        assert_eq!(affinity.changed(), 1);
        assert!(affinity.restore_all().is_empty());
        assert_eq!(get_affinity(tid).unwrap(), original);
        worker.finish();
    }

    #[test]
    fn a_panic_while_threads_are_pinned_still_restores_them() {
        let worker = super::super::test_thread::ParkedThread::start();
        let tid = worker.tid;
        let original = get_affinity(tid).unwrap();
        let first = CpuSet::from_iter([original.last().unwrap()]);
        let unwound = std::panic::catch_unwind(|| {
            let mut affinity = Affinity::default();
            assert!(affinity.set(tid, &original, &first).unwrap());
            assert_eq!(get_affinity(tid).unwrap(), first);
            panic!("a bug while pinned");
        });
        assert!(unwound.is_err());
        assert_eq!(
            get_affinity(tid).unwrap(),
            original,
            "Drop put the mask back during the unwinding"
        );
        worker.finish();
    }

    #[test]
    fn a_vanished_thread_is_not_an_error() {
        // The kernel answers ESRCH for a thread that has ended. A joined
        // thread is not always ended yet (join returns once the kernel
        // clears the thread's id word, which it does while the thread is
        // still exiting), and an ended thread's id may be given to a new
        // one (with a pid_max of 32768 the ids wrap within a build); one or
        // the other failed this test once under CI. It asks for an id
        // above any pid_max (at most 2^22) instead: no thread can have it.
        let tid = i32::MAX as u32;
        let cpus = get_affinity(0).unwrap();
        let mut affinity = Affinity::default();
        assert!(!affinity.set(tid, &cpus, &cpus).unwrap());
        assert_eq!(affinity.changed(), 0);
    }
}
