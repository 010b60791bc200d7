//! The writing side: the process's channel file and [`beat`].
//!
//! ```text
//!   beat(units)
//!     │ thread-local {slot, epoch} current? ── yes ─► slot.count.fetch_add(units)      (fast path)
//!     │ no (first beat of this thread, or first after fork)
//!     ▼
//!   process_channel()  first call in the process: Channel::create ─► tmp file, header, rename
//!     ▼
//!   Channel::claim(tid)  CAS tid 0 -> gettid on the first free slot, count = 0
//!     ▼
//!   thread exits ─► ThreadSlot::drop ─► release: count = 0, tid = 0
//! ```
//!
//! The channel of a process is created once and mapped for the life of the
//! process (and removes channels that killed processes left); an `atexit` handler unlinks the file when the process exits
//! normally. A forked child inherits that mapping but has another pid: an
//! `atfork` handler makes the child forget it (bumping the epoch that thread
//! slots are checked against), so the child's first beat creates its own file.

use crate::{
    DEFAULT_SLOTS, HEADER_BYTES, Header, HeartbeatError, MAGIC, MAX_SLOTS, SLOT_BYTES, SLOTS_ENV, Slot, VERSION,
    channel_dir, channel_path_in, current_tid, process_start_ticks,
};
use std::cell::Cell;
use std::fs::{OpenOptions, Permissions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicU64, Ordering};

/// A channel file mapped read-write (the writer's view).
pub(crate) struct Channel {
    base: NonNull<u8>,
    len: usize,
    slot_count: u32,
    pid: u32,
    path: PathBuf,
}

// SAFETY: the mapping is only accessed through atomics (slots) or was fully
// written before the channel became visible to other threads (header).
unsafe impl Send for Channel {}
unsafe impl Sync for Channel {}

impl Channel {
    /// Creates (or replaces) the channel file of `pid` in `dir` with
    /// `slot_count` free slots and maps it.
    pub(crate) fn create(dir: &Path, pid: u32, slot_count: u32) -> Result<Channel, HeartbeatError> {
        let path = channel_path_in(dir, pid);
        let tmp = dir.join(format!(".pinlearn-heartbeat-{pid}.tmp"));
        let failed = |source| HeartbeatError::Create {
            path: path.clone(),
            source,
        };
        crate::remove_if_present(&tmp).map_err(failed)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(failed)?;
        let len = HEADER_BYTES + SLOT_BYTES * slot_count as usize;
        let prepared = file
            .set_permissions(Permissions::from_mode(0o600))
            .and_then(|()| file.set_len(len as u64));
        if let Err(e) = prepared {
            let _ = std::fs::remove_file(&tmp);
            return Err(failed(e));
        }
        // SAFETY: mapping a file we own, of `len` bytes, shared so readers see it.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            let source = std::io::Error::last_os_error();
            let _ = std::fs::remove_file(&tmp);
            return Err(HeartbeatError::Map { path, source });
        }
        let base = NonNull::new(base.cast::<u8>()).expect("mmap never returns null on success");
        let channel = Channel {
            base,
            len,
            slot_count,
            pid,
            path: path.clone(),
        };
        let header = Header {
            magic: MAGIC,
            version: VERSION,
            slot_count,
            pid,
            pad: 0,
            start_ticks: process_start_ticks(pid).unwrap_or(0),
        };
        // SAFETY: the mapping is at least HEADER_BYTES long and page aligned;
        // nobody else sees the temporary file yet.
        unsafe { ptr::write(channel.base.as_ptr().cast::<Header>(), header) };
        if let Err(e) = std::fs::rename(&tmp, &path) {
            let _ = std::fs::remove_file(&tmp);
            return Err(failed(e));
        }
        // Programs killed before their atexit left channels behind: sweep them.
        crate::remove_stale_channels(dir, pid);
        Ok(channel)
    }

    fn slots(&self) -> &[Slot] {
        // SAFETY: the mapping holds slot_count slots after the header, Slot is
        // repr(C) of atomics and plain integers, valid for any bit pattern.
        unsafe {
            std::slice::from_raw_parts(
                self.base.as_ptr().add(HEADER_BYTES).cast::<Slot>(),
                self.slot_count as usize,
            )
        }
    }

    /// Claims a free slot for thread `tid` with a fresh count of 0, or `None`
    /// when every slot is taken.
    pub(crate) fn claim(&self, tid: u32) -> Option<&Slot> {
        let slots = self.slots();
        let start = (tid as usize).wrapping_mul(4) % slots.len();
        let (after, before) = slots.split_at(start);
        before
            .iter()
            .chain(after)
            .find(|slot| {
                slot.tid.load(Ordering::Relaxed) == 0
                    && slot
                        .tid
                        .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
            })
            .inspect(|slot| slot.count.store(0, Ordering::Relaxed))
    }
}

/// Frees a slot: its count goes back to 0 before its tid does, so a free slot
/// always holds a zero count and a reader never credits one thread's count to another.
pub(crate) fn release(slot: &Slot) {
    slot.count.store(0, Ordering::Relaxed);
    slot.tid.store(0, Ordering::Release);
}

impl Drop for Channel {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what create() mapped; no slot reference
        // outlives the channel (the process channel is never dropped).
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

const UNINIT: u8 = 0;
const INITIALIZING: u8 = 1;
const READY: u8 = 2;
const DISABLED: u8 = 3;

/// Whether the process channel exists yet (one of the constants above).
static STATE: AtomicU8 = AtomicU8::new(UNINIT);
/// The process channel once STATE is READY; leaked, never unmapped.
static CHANNEL: AtomicPtr<Channel> = AtomicPtr::new(ptr::null_mut());
/// Bumped in a forked child: thread slots of another epoch belong to the parent's file.
static EPOCH: AtomicU64 = AtomicU64::new(1);
static ATFORK_REGISTERED: AtomicBool = AtomicBool::new(false);
static ATEXIT_REGISTERED: AtomicBool = AtomicBool::new(false);
static WARNED: AtomicBool = AtomicBool::new(false);

/// Prints `message` on stderr if no heartbeat warning was printed yet in this process.
fn warn_once(message: std::fmt::Arguments<'_>) {
    if !WARNED.swap(true, Ordering::Relaxed) {
        let _ = writeln!(std::io::stderr(), "pinlearn-heartbeat: {message}");
    }
}

fn slot_count_from_env() -> u32 {
    match std::env::var(SLOTS_ENV) {
        Err(_) => DEFAULT_SLOTS,
        Ok(text) => match text.trim().parse::<u32>() {
            Ok(n) => n.clamp(1, MAX_SLOTS),
            Err(_) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "pinlearn-heartbeat: ignoring {SLOTS_ENV}={text:?} (not a whole number), using {DEFAULT_SLOTS} slots"
                );
                DEFAULT_SLOTS
            }
        },
    }
}

/// At normal process exit: unlinks this process's channel file. Readers that
/// opened it keep their mapping; a forked child never removes its parent's file.
extern "C" fn remove_channel_at_exit() {
    if STATE.load(Ordering::Acquire) != READY {
        return;
    }
    // SAFETY: CHANNEL was set from a leaked Box before STATE became READY.
    let channel = unsafe { CHANNEL.load(Ordering::Acquire).as_ref() };
    if let Some(channel) = channel.filter(|channel| channel.pid == std::process::id()) {
        let _ = std::fs::remove_file(&channel.path);
    }
}

extern "C" fn forget_parent_channel() {
    CHANNEL.store(ptr::null_mut(), Ordering::Relaxed);
    STATE.store(UNINIT, Ordering::Relaxed);
    EPOCH.fetch_add(1, Ordering::Relaxed);
}

/// The channel of this process, created on first use; `None` when it could not be created.
fn process_channel() -> Option<&'static Channel> {
    loop {
        match STATE.load(Ordering::Acquire) {
            // SAFETY: CHANNEL was set from a leaked Box before STATE became READY.
            READY => return unsafe { CHANNEL.load(Ordering::Acquire).as_ref() },
            DISABLED => return None,
            UNINIT => {
                if STATE
                    .compare_exchange(UNINIT, INITIALIZING, Ordering::Acquire, Ordering::Relaxed)
                    .is_err()
                {
                    continue;
                }
                if !ATFORK_REGISTERED.swap(true, Ordering::Relaxed) {
                    // SAFETY: registering a handler that only touches atomics.
                    unsafe { libc::pthread_atfork(None, None, Some(forget_parent_channel)) };
                }
                match Channel::create(&channel_dir(), std::process::id(), slot_count_from_env()) {
                    Ok(channel) => {
                        CHANNEL.store(Box::into_raw(Box::new(channel)), Ordering::Release);
                        STATE.store(READY, Ordering::Release);
                        if !ATEXIT_REGISTERED.swap(true, Ordering::Relaxed) {
                            // SAFETY: registering a handler that only unlinks a file.
                            unsafe { libc::atexit(remove_channel_at_exit) };
                        }
                    }
                    Err(e) => {
                        warn_once(format_args!("progress reporting disabled: {e}"));
                        STATE.store(DISABLED, Ordering::Release);
                    }
                }
            }
            _ => std::thread::yield_now(),
        }
    }
}

/// This thread's slot in the process channel (null: none) and the epoch it belongs to.
struct ThreadSlot {
    slot: Cell<*const Slot>,
    epoch: Cell<u64>,
}

impl Drop for ThreadSlot {
    fn drop(&mut self) {
        let slot = self.slot.get();
        if !slot.is_null() && self.epoch.get() == EPOCH.load(Ordering::Relaxed) {
            // SAFETY: slots of the current epoch live in the process channel, never unmapped.
            release(unsafe { &*slot });
        }
    }
}

thread_local! {
    static THREAD_SLOT: ThreadSlot = const { ThreadSlot { slot: Cell::new(ptr::null()), epoch: Cell::new(0) } };
}

fn claim_for_current_thread() -> *const Slot {
    let Some(channel) = process_channel() else {
        return ptr::null();
    };
    match channel.claim(current_tid()) {
        Some(slot) => slot,
        None => {
            warn_once(format_args!(
                "all {} heartbeat slots are taken, so some threads' progress is not reported (raise {SLOTS_ENV})",
                channel.slot_count
            ));
            ptr::null()
        }
    }
}

/// Adds `units` of finished work to the calling thread's counter.
///
/// The first call on a thread claims a slot in the process channel (creating
/// the channel on the first call in the process); the slot is freed when the
/// thread exits. Never fails: when progress cannot be reported it prints one
/// warning and does nothing. `beat(0)` makes the thread visible with its count.
pub fn beat(units: u64) {
    // try_with fails only while this thread's locals are being destroyed.
    let _ = THREAD_SLOT.try_with(|thread_slot| {
        let epoch = EPOCH.load(Ordering::Relaxed);
        if thread_slot.epoch.get() != epoch {
            thread_slot.slot.set(claim_for_current_thread());
            thread_slot.epoch.set(epoch);
        }
        let slot = thread_slot.slot.get();
        if !slot.is_null() {
            // SAFETY: a non-null slot of the current epoch lives in the process channel.
            unsafe { &*slot }.count.fetch_add(units, Ordering::Relaxed);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DIR_ENV, HeartbeatReader, channel_path};
    use std::collections::BTreeMap;
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::sync::{Barrier, mpsc};

    fn read_map(reader: &mut HeartbeatReader) -> BTreeMap<u32, u64> {
        let mut out = Vec::new();
        reader.read_into(&mut out).expect("readable");
        let map: BTreeMap<u32, u64> = out.iter().copied().collect();
        assert_eq!(map.len(), out.len(), "a tid appears in two slots: {out:?}");
        map
    }

    #[test]
    fn thread_pool_counts_are_exact_and_slots_free_on_exit() {
        let hold = Barrier::new(5);
        let (sender, receiver) = mpsc::channel();
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4u64)
                .map(|i| {
                    let (hold, sender) = (&hold, sender.clone());
                    scope.spawn(move || {
                        for _ in 0..(i + 1) * 1000 {
                            beat(1);
                        }
                        beat(7);
                        sender
                            .send((current_tid(), (i + 1) * 1000 + 7))
                            .expect("receiver alive");
                        hold.wait();
                    })
                })
                .collect();
            let expected: Vec<(u32, u64)> = receiver.iter().take(4).collect();
            let mut reader = HeartbeatReader::open(std::process::id())
                .expect("valid channel")
                .expect("channel exists");
            let counts = read_map(&mut reader);
            for (tid, count) in &expected {
                assert_eq!(counts.get(tid), Some(count), "thread {tid}");
            }
            hold.wait();
            for handle in handles {
                handle.join().expect("writer thread");
            }
            let after = read_map(&mut reader);
            for (tid, _) in &expected {
                assert!(!after.contains_key(tid), "slot of exited thread {tid} is still taken");
            }
        });
    }

    #[test]
    fn channel_file_is_private_to_the_owner() {
        beat(0);
        let mode = std::fs::metadata(channel_path(std::process::id()))
            .expect("channel exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn freed_slot_is_reused_with_a_fresh_count() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let pid = u32::MAX - 1;
        let channel = Channel::create(dir.path(), pid, 1).expect("channel");
        let mut reader = HeartbeatReader::open_in(dir.path(), pid)
            .expect("valid")
            .expect("exists");
        let first = channel.claim(11).expect("one free slot");
        first.count.fetch_add(9, Ordering::Relaxed);
        assert_eq!(read_map(&mut reader), BTreeMap::from([(11, 9)]));
        assert!(channel.claim(12).is_none(), "the only slot is taken");
        release(first);
        assert!(read_map(&mut reader).is_empty());
        let second = channel.claim(12).expect("freed slot");
        assert!(ptr::eq(first, second));
        assert_eq!(read_map(&mut reader), BTreeMap::from([(12, 0)]));
    }

    #[test]
    fn stale_or_foreign_file_is_replaced() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let pid = u32::MAX - 2;
        std::fs::write(
            channel_path_in(dir.path(), pid),
            b"not a heartbeat channel at all, just text",
        )
        .expect("write");
        assert!(matches!(
            HeartbeatReader::open_in(dir.path(), pid),
            Err(HeartbeatError::BadMagic { .. })
        ));
        let channel = Channel::create(dir.path(), pid, 8).expect("channel replaces the file");
        channel
            .claim(5)
            .expect("free slot")
            .count
            .fetch_add(3, Ordering::Relaxed);
        let mut reader = HeartbeatReader::open_in(dir.path(), pid)
            .expect("valid")
            .expect("exists");
        assert_eq!(reader.slot_count(), 8);
        assert_eq!(read_map(&mut reader), BTreeMap::from([(5, 3)]));
    }

    #[test]
    fn creation_in_a_missing_directory_is_an_error() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let missing = dir.path().join("absent");
        assert!(matches!(
            Channel::create(&missing, 1, 4),
            Err(HeartbeatError::Create { .. })
        ));
    }

    const CHILD_ENV: &str = "PINLEARN_HEARTBEAT_TEST_CHILD";
    /// Starts every line the child prints for the parent.
    const MARK: &str = "@heartbeat-test";

    /// Entry point of the child process of
    /// `counters_written_by_another_process_are_read_exactly`: beats known
    /// amounts on three threads and on the test thread, forks a grandchild that
    /// beats 5, prints what it did, and keeps its threads alive until stdin
    /// gets a line.
    #[test]
    #[ignore = "entry point of the child process of counters_written_by_another_process_are_read_exactly"]
    fn child_process_writer() {
        if std::env::var_os(CHILD_ENV).is_none() {
            return; // only meaningful as the child of counters_written_by_another_process_are_read_exactly
        }
        beat(1);
        println!("{MARK} beat {} 1", current_tid());
        // SAFETY: no other thread of this process holds a lock at this point
        // (the harness thread waits for this test); the grandchild only beats and exits.
        let grandchild = unsafe { libc::fork() };
        if grandchild == 0 {
            beat(5);
            // SAFETY: leaving the forked process without running the parent's exit handlers.
            unsafe { libc::_exit(0) };
        }
        assert!(grandchild > 0, "fork failed");
        let mut status = 0;
        // SAFETY: waiting for the child we just forked.
        unsafe { libc::waitpid(grandchild, &mut status, 0) };
        println!("{MARK} grandchild {grandchild}");
        let hold = Barrier::new(4);
        let beaten = AtomicU8::new(0);
        std::thread::scope(|scope| {
            for i in 0..3u64 {
                let (hold, beaten) = (&hold, &beaten);
                scope.spawn(move || {
                    for _ in 0..(i + 1) * 100 {
                        beat(1);
                    }
                    println!("{MARK} beat {} {}", current_tid(), (i + 1) * 100);
                    beaten.fetch_add(1, Ordering::Release);
                    hold.wait();
                });
            }
            while beaten.load(Ordering::Acquire) < 3 {
                std::thread::yield_now();
            }
            println!("{MARK} ready");
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
            hold.wait();
        });
    }

    #[test]
    fn counters_written_by_another_process_are_read_exactly() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut child = Command::new(std::env::current_exe().expect("test executable"))
            .args([
                "--exact",
                "writer::tests::child_process_writer",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(DIR_ENV, dir.path())
            .env(CHILD_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the test executable");
        let mut expected = BTreeMap::new();
        let mut grandchild: Option<u32> = None;
        // The harness prints "test ... " before the test's output on the same line.
        let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        for line in &mut lines {
            let line = line.expect("utf-8 line");
            let Some(at) = line.find(MARK) else { continue };
            let words: Vec<&str> = line[at + MARK.len()..].split_whitespace().collect();
            match words.as_slice() {
                ["beat", tid, count] => {
                    expected.insert(tid.parse::<u32>().expect("tid"), count.parse::<u64>().expect("count"));
                }
                ["grandchild", pid] => grandchild = Some(pid.parse().expect("pid")),
                ["ready"] => break,
                _ => panic!("unexpected line from the child: {line}"),
            }
        }
        assert_eq!(
            expected.len(),
            4,
            "the child's test thread and its three workers reported"
        );
        let child_pid = child.id();
        let mut reader = HeartbeatReader::open_in(dir.path(), child_pid)
            .expect("valid")
            .expect("child's channel exists");
        assert_eq!(reader.pid(), child_pid);
        assert_eq!(read_map(&mut reader), expected);
        let mode = std::fs::metadata(channel_path_in(dir.path(), child_pid))
            .expect("exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);

        // The forked grandchild reported into its own channel, not its parent's.
        let grandchild = grandchild.expect("child reported its grandchild");
        let mut reader = HeartbeatReader::open_in(dir.path(), grandchild)
            .expect("valid")
            .expect("grandchild's channel");
        assert_eq!(read_map(&mut reader), BTreeMap::from([(grandchild, 5)]));

        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(b"done\n")
            .expect("child reads stdin");
        lines.for_each(drop); // keep reading until the child closes its stdout
        assert!(child.wait().expect("child exits").success());

        // A normal exit removes the file; the grandchild left with _exit, as a crash would.
        assert!(
            !channel_path_in(dir.path(), child_pid).exists(),
            "exited child's channel file remains"
        );
        assert!(channel_path_in(dir.path(), grandchild).exists());
    }
}
