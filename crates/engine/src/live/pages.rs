//! The pages each thread touched first, from page-fault samples, so that
//! its memory can follow it to the node pinlearn places it on.
//!
//! ```text
//!   admit(thread)   perf_event_open(SW PAGE_FAULTS, tid, every fault, sample ADDR) ─► ring
//!   every period    drain ─► faulting addresses ─► page ranges (merged, at most MAX_PAGES)
//!   move(pid, to)   every recorded page ─► move_pages(2) ─► pages now on `to` (memory.rs)
//! ```
//!
//! The event costs the thread on every switch to it (about 1.1 us in this
//! KVM guest, `scripts/bench-switch-cost`, event 3), so for a thread
//! switched to often it stays open only while the thread faults: closed
//! after a period without faults, opened again when the thread's fault
//! count (`/proc/PID/task/TID/stat`) has grown (the caller's duty rule,
//! `live/mod.rs`); the faults of the periods in between are not recorded.
//!
//! A page fault is a first touch: Linux puts the page on the node of the
//! CPU the thread faulted on, so the pages a thread faulted are the memory
//! that stays behind when pinlearn moves the thread to another node. Pages
//! touched after the move are first-touched where the thread now runs and
//! need nothing. Faults taken before pinlearn saw the thread (attach, or
//! the first period of a new thread) are not known; a ring that fills
//! within a period loses the faults beyond it (counted, said once by the
//! caller). A software event: it works without hardware counters.
//!
//! An unprivileged user may lock only so much memory for perf rings
//! (`perf_event_mlock_kb` per CPU, then `RLIMIT_MEMLOCK`), shared with the
//! CPU-clock samples: a ring the kernel will not map ([`OpenError::Ring`])
//! is asked for again at half the size, down to [`FAULT_RING_MIN_BYTES`],
//! by the caller, which leaves the threads beyond unrecorded rather than
//! every thread.

use super::probe::{RECORD_SAMPLE, leading_bytes};
use perf_event::Sampler;
use std::io;

/// PERF_RECORD_LOST (linux/perf_event.h).
const RECORD_LOST: u32 = 2;

/// Pages recorded per thread at most (4 GiB of 4 KiB pages): beyond,
/// later faults are not followed.
pub const MAX_PAGES: u64 = 1 << 20;

/// Ranges kept before they are sorted and merged again.
const COMPACT_AT: usize = 4096;

/// Ring of each thread's fault samples: 16384 faults (16 bytes each) a
/// period, 64 MiB of 4 KiB pages first touched in 50 ms (this machine
/// faulted about 330000 pages a second into a fresh mapping,
/// `examples/fault_sampling_cost.rs`; a 64 KiB ring lost 70% of them).
pub const FAULT_RING_BYTES: usize = 256 << 10;

/// The smallest ring asked for where the locked-memory limit refused
/// larger ones: 1024 faults a period (4 MiB first touched in 50 ms).
pub const FAULT_RING_MIN_BYTES: usize = 16 << 10;

/// Why a thread's fault event did not open.
#[derive(Debug)]
pub enum OpenError {
    /// perf_event_open refused the event (perf_event_paranoid, seccomp, a
    /// thread that ended).
    Event(io::Error),
    /// The event opened but its ring was not mapped: the locked memory
    /// this user may have for perf rings is used up (or none at all).
    Ring(io::Error),
}

impl OpenError {
    /// The error the kernel gave.
    pub fn io(&self) -> &io::Error {
        match self {
            OpenError::Event(e) | OpenError::Ring(e) => e,
        }
    }
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Event(e) => write!(f, "perf_event_open: {e}"),
            OpenError::Ring(e) => write!(
                f,
                "mapping its ring: {e}; the locked memory for perf rings is used up (perf_event_mlock_kb, ulimit -l)"
            ),
        }
    }
}

/// One thread's first-touched pages.
pub struct FaultPages {
    /// The open event; `None` while closed ([`Self::set_open`]).
    sampler: Option<Sampler>,
    tid: u32,
    /// Bytes of its ring (a power of two, at least a page).
    ring_bytes: usize,
    page_shift: u32,
    /// Page number ranges `[start, end)`, the newest last; sorted and
    /// merged whenever more than [`COMPACT_AT`] accumulate.
    ranges: Vec<(u64, u64)>,
    /// Pages in `ranges` after the last compaction (an upper bound since).
    pages: u64,
    /// Faults that were not recorded: the ring filled, or [`MAX_PAGES`] reached.
    pub missed: u64,
    /// Faults taken in the last [`Self::drain`].
    pub drained: u64,
}

impl FaultPages {
    /// Starts recording the page faults of thread `tid` into a ring of
    /// `ring_bytes` (rounded up to a power of two, at least a page).
    pub fn open(tid: u32, ring_bytes: usize) -> Result<Self, OpenError> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
        let ring_bytes = ring_bytes.max(page as usize).next_power_of_two();
        Ok(FaultPages {
            sampler: Some(Self::event(tid, ring_bytes)?),
            tid,
            ring_bytes,
            page_shift: page.trailing_zeros(),
            ranges: Vec::new(),
            pages: 0,
            missed: 0,
            drained: 0,
        })
    }

    /// Whether the event is open.
    pub fn is_open(&self) -> bool {
        self.sampler.is_some()
    }

    /// Opens the event again, or closes it (taking what it recorded first).
    pub fn set_open(&mut self, open: bool) -> Result<(), OpenError> {
        match (open, self.sampler.is_some()) {
            (true, false) => self.sampler = Some(Self::event(self.tid, self.ring_bytes)?),
            (false, true) => {
                self.drain();
                self.sampler = None;
            }
            _ => {}
        }
        Ok(())
    }

    /// Bytes of its ring.
    pub fn ring_bytes(&self) -> usize {
        self.ring_bytes
    }

    fn event(tid: u32, ring_bytes: usize) -> Result<Sampler, OpenError> {
        let build = |exclude_kernel: bool| {
            perf_event::Builder::new(perf_event::events::Software::PAGE_FAULTS)
                .observe_pid(tid as i32)
                .any_cpu()
                .exclude_kernel(exclude_kernel)
                .exclude_hv(true)
                .sample_period(1)
                .sample(perf_event::SampleFlag::ADDR)
                .build()
        };
        // Faults in the kernel's copies to a fresh buffer (read(2) into it)
        // count too where the kernel allows it; else user-mode ones only.
        let counter = build(false).or_else(|_| build(true)).map_err(OpenError::Event)?;
        let mut sampler = counter.sampled(ring_bytes).map_err(OpenError::Ring)?;
        sampler.enable().map_err(OpenError::Event)?;
        Ok(sampler)
    }

    /// Takes every fault sample from the ring into the page ranges.
    pub fn drain(&mut self) {
        let mut pages = Vec::new();
        let Some(sampler) = self.sampler.as_mut() else {
            self.drained = 0;
            return;
        };
        while let Some(record) = sampler.next_record() {
            let (word, filled) = leading_bytes::<16>(&record);
            match record.ty() {
                RECORD_SAMPLE if filled >= 8 => {
                    let address = u64::from_ne_bytes(word[..8].try_into().expect("8 bytes"));
                    pages.push(address >> self.page_shift);
                }
                // PERF_RECORD_LOST: { id, lost }.
                RECORD_LOST if filled >= 16 => {
                    self.missed += u64::from_ne_bytes(word[8..16].try_into().expect("8 bytes"));
                }
                _ => {}
            }
        }
        self.drained = pages.len() as u64;
        for page in pages {
            self.add(page);
        }
    }

    fn add(&mut self, page: u64) {
        if let Some(last) = self.ranges.last_mut() {
            if (last.0..last.1).contains(&page) {
                return;
            }
            if last.1 == page {
                last.1 += 1;
                self.pages += 1;
                return;
            }
        }
        if self.pages >= MAX_PAGES {
            self.missed += 1;
            return;
        }
        self.ranges.push((page, page + 1));
        self.pages += 1;
        if self.ranges.len() > COMPACT_AT {
            self.compact();
        }
    }

    /// Sorts and merges the ranges (overlapping or adjacent ones become one).
    fn compact(&mut self) {
        self.ranges.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.ranges.len());
        for &(start, end) in &self.ranges {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        self.pages = merged.iter().map(|(start, end)| end - start).sum();
        self.ranges = merged;
    }

    /// The start address of every page recorded, each once, in order.
    pub fn addresses(&mut self) -> Vec<u64> {
        self.drain();
        self.compact();
        let shift = self.page_shift;
        self.ranges
            .iter()
            .flat_map(|&(start, end)| (start..end).map(move |page| page << shift))
            .collect()
    }

    /// The start addresses of at most `most` of the pages recorded, spread
    /// evenly over them (all where there are fewer), in order.
    pub fn spread(&mut self, most: usize) -> Vec<u64> {
        self.drain();
        self.compact();
        let total = self.ranges.iter().map(|(start, end)| end - start).sum::<u64>();
        let wanted = (most as u64).min(total);
        let mut picked = Vec::with_capacity(wanted as usize);
        let (mut range, mut before) = (0, 0);
        for i in 0..wanted {
            // The page at this rank among all recorded.
            let rank = i * total / wanted;
            while let Some(&(start, end)) = self.ranges.get(range) {
                if rank < before + (end - start) {
                    picked.push((start + rank - before) << self.page_shift);
                    break;
                }
                before += end - start;
                range += 1;
            }
        }
        picked
    }

    /// Pages recorded.
    #[cfg(test)]
    fn pages(&mut self) -> u64 {
        self.compact();
        self.pages
    }
}

/// Whether this kernel lets pinlearn record a thread's page faults: `Err`
/// carries the reason to tell the user once.
pub fn fault_recording_supported() -> Result<(), String> {
    FaultPages::open(crate::live::current_tid(), FAULT_RING_MIN_BYTES)
        .map(drop)
        .map_err(|e| match e {
            OpenError::Event(e) => format!(
                "page faults cannot be recorded here (perf_event_open: {e}; see /proc/sys/kernel/perf_event_paranoid)"
            ),
            OpenError::Ring(_) => format!("page faults cannot be recorded here ({e})"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh anonymous mapping of `pages` pages, unmapped on drop.
    struct Fresh {
        start: *mut libc::c_void,
        len: usize,
    }

    impl Fresh {
        fn map(pages: usize) -> Self {
            let len = pages * 4096;
            // SAFETY: an anonymous private mapping; checked below.
            let start = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(start, libc::MAP_FAILED, "mmap");
            Fresh { start, len }
        }

        fn touch(&self) {
            for offset in (0..self.len).step_by(4096) {
                // SAFETY: inside the mapping, which is writable.
                unsafe { std::ptr::write_volatile((self.start as *mut u8).add(offset), 1) };
            }
        }
    }

    impl Drop for Fresh {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `map`.
            unsafe { libc::munmap(self.start, self.len) };
        }
    }

    #[test]
    fn the_pages_a_thread_touches_first_are_recorded_and_no_others() {
        let before = Fresh::map(64);
        before.touch();
        let mut faults = FaultPages::open(crate::live::current_tid(), FAULT_RING_BYTES)
            .expect("page-fault sampling (a software event)");
        let fresh = Fresh::map(300);
        fresh.touch();
        // Touched again: no fault, nothing new.
        fresh.touch();
        before.touch();
        let addresses = faults.addresses();
        let (start, end) = (fresh.start as u64, fresh.start as u64 + fresh.len as u64);
        let inside = addresses.iter().filter(|&&a| (start..end).contains(&a)).count();
        assert_eq!(inside, 300, "every page of the fresh mapping, once");
        let before_start = before.start as u64;
        assert!(
            !addresses
                .iter()
                .any(|&a| (before_start..before_start + before.len as u64).contains(&a)),
            "pages touched before recording began are not the thread's new memory"
        );
        assert!(addresses.windows(2).all(|w| w[0] < w[1]), "in order, each once");
        assert_eq!(faults.pages(), addresses.len() as u64);
    }

    #[test]
    fn a_closed_event_records_nothing_and_reopened_records_again() {
        let mut faults = FaultPages::open(crate::live::current_tid(), FAULT_RING_BYTES).expect("page-fault sampling");
        let first = Fresh::map(16);
        first.touch();
        faults.set_open(false).expect("close");
        assert!(!faults.is_open());
        let unseen = Fresh::map(16);
        unseen.touch();
        faults.set_open(true).expect("open again");
        let again = Fresh::map(16);
        again.touch();
        let addresses = faults.addresses();
        let inside = |fresh: &Fresh| {
            let start = fresh.start as u64;
            addresses
                .iter()
                .filter(|&&a| (start..start + fresh.len as u64).contains(&a))
                .count()
        };
        assert_eq!((inside(&first), inside(&unseen), inside(&again)), (16, 0, 16));
    }

    #[test]
    fn pages_out_of_order_merge_into_ranges() {
        let mut faults = FaultPages::open(crate::live::current_tid(), FAULT_RING_BYTES).expect("page-fault sampling");
        for page in [10, 11, 12, 5, 6, 13, 7, 20] {
            faults.add(page);
        }
        faults.compact();
        assert_eq!(faults.ranges, vec![(5, 8), (10, 14), (20, 21)]);
        assert_eq!(faults.pages, 8);
    }

    #[test]
    fn a_spread_picks_pages_evenly_over_the_ranges() {
        let mut faults = FaultPages::open(crate::live::current_tid(), FAULT_RING_BYTES).expect("page-fault sampling");
        faults.set_open(false).expect("close");
        for page in (100..108).chain(200..208) {
            faults.add(page);
        }
        let shift = faults.page_shift;
        let pages = |addresses: Vec<u64>| addresses.into_iter().map(|a| a >> shift).collect::<Vec<_>>();
        assert_eq!(pages(faults.spread(4)), vec![100, 104, 200, 204]);
        assert_eq!(pages(faults.spread(100)).len(), 16, "all where fewer than asked");
        assert_eq!(pages(faults.spread(0)), Vec::<u64>::new());
    }
}
