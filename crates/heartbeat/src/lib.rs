//! Application progress ("heartbeats") that pinlearn reads from outside the process.
//! (The same rules carry the bubbles a program declares: [`bubble_channel`].)
//!
//! Threads of an application call [`beat`] with the units of work they just
//! finished; pinlearn, running as another process, opens the same channel with
//! [`HeartbeatReader`] and reads each thread's running total. Progress is the
//! honest utility where busy-waiting would inflate instructions per second.
//!
//! ```text
//!   application process (pid P)                        pinlearn (another process)
//!   ───────────────────────────                        ──────────────────────────
//!   thread T1 ─ beat(u) ─► slot k1 {tid T1, count} ─┐
//!   thread T2 ─ beat(u) ─► slot k2 {tid T2, count} ─┼─ $DIR/pinlearn-heartbeat-P ─► HeartbeatReader::open(P)
//!   thread T3 exits ─────► slot k3 {tid 0 (free)}  ─┘   (0600; the reader: pread)     read_into(&mut [(tid, count)])
//! ```
//!
//! # Where the channel lives
//!
//! One file per process, `$PINLEARN_HEARTBEAT_DIR/pinlearn-heartbeat-<pid>`.
//! Without the variable the directory is `/dev/shm`, or [`std::env::temp_dir`]
//! where `/dev/shm` does not exist. Writer and reader must resolve the same
//! directory (same variable, or both unset). The writer creates the file on the
//! first [`beat`] of the process, with mode 0600, under a temporary name that it
//! renames into place once the header is complete, so a reader never sees a
//! half-written header and a stale file left by an earlier process with the same
//! pid is replaced atomically. The writer unlinks the file when the process
//! exits normally (`atexit`); a reader that opened it before keeps its mapping
//! and reads the last counts. After a crash or a kill the file stays: the
//! reader side calls [`remove_channel`] once the process has ended.
//!
//! # File layout (ABI, version 1)
//!
//! All integers are native-endian (the reader runs on the same machine); the
//! counters are 64-bit atomics, so the channel needs a platform with lock-free
//! 64-bit atomic loads (every 64-bit Linux target).
//!
//! ```text
//!   offset  size  field
//!   0       8     magic        the ASCII bytes "PLHBEAT1"
//!   8       4     version      u32 = 1
//!   12      4     slot_count   u32, number of slots that follow (1 ..= 1_048_576)
//!   16      4     pid          u32, the writing process
//!   20      4     pad          0
//!   24      8     start_ticks  u64, the writer's start time (field 22 of /proc/<pid>/stat,
//!                              clock ticks since boot), 0 if unknown
//!   32      16*slot_count      slots, slot i at offset 32 + 16*i:
//!             +0  4  tid       AtomicU32, kernel thread id owning the slot, 0 = free
//!             +4  4  pad       0
//!             +8  8  count     AtomicU64, units reported by that thread since it claimed the slot
//! ```
//!
//! Writer protocol: a thread claims a free slot with a compare-and-swap of `tid`
//! from 0 to its own tid (Acquire), sets `count` to 0, then only ever does
//! `count.fetch_add(units, Relaxed)`. When the thread exits it stores
//! `count = 0` and then `tid = 0` (Release), so a free slot always holds a zero
//! count. A thread starts its search at slot `(tid * 4) mod slot_count`, so
//! concurrent threads tend to land on different 64-byte cache lines.
//!
//! Reader protocol: for each slot load `tid` (Acquire), `count` (Acquire), and
//! `tid` again; a slot is reported only when both `tid` loads agree and are
//! non-zero. Readers never write, so reading cannot block or slow a writer
//! beyond sharing the cache line. A file whose `start_ticks` differs from the
//! start time of the live process with that pid is stale (pid reuse) and reads
//! as absent.
//!
//! # Failure policy
//!
//! Progress reporting must never make an application fail: when the channel
//! cannot be created (no directory, no space) or a thread finds the slot table
//! full, [`beat`] prints one warning line to stderr (once per process) and then
//! does nothing for that process (or that thread).

pub mod bubble_channel;
mod reader;
mod writer;

pub use bubble_channel::{BubbleChannelReader, BubbleChannelWriter, BubbleOp, remove_bubble_channel};
pub use reader::HeartbeatReader;
pub use writer::beat;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64};

/// First 8 bytes of every channel file.
pub const MAGIC: [u8; 8] = *b"PLHBEAT1";
/// Layout version written in the header.
pub const VERSION: u32 = 1;
/// Size of the header in bytes; slot 0 starts here.
pub const HEADER_BYTES: usize = 32;
/// Size of one slot in bytes.
pub const SLOT_BYTES: usize = 16;
/// Slots per channel unless `PINLEARN_HEARTBEAT_SLOTS` says otherwise.
pub const DEFAULT_SLOTS: u32 = 1024;
/// Largest slot count a channel may have (16 MiB of slots).
pub const MAX_SLOTS: u32 = 1 << 20;
/// Environment variable naming the channel directory.
pub const DIR_ENV: &str = "PINLEARN_HEARTBEAT_DIR";
/// Environment variable overriding the slot count of channels this process creates.
pub const SLOTS_ENV: &str = "PINLEARN_HEARTBEAT_SLOTS";

/// The header at offset 0 of a channel file (see the module doc).
#[repr(C)]
struct Header {
    magic: [u8; 8],
    version: u32,
    slot_count: u32,
    pid: u32,
    pad: u32,
    start_ticks: u64,
}

/// One thread's counter (see the module doc).
#[repr(C)]
struct Slot {
    tid: AtomicU32,
    pad: u32,
    count: AtomicU64,
}

const _: () = assert!(std::mem::size_of::<Header>() == HEADER_BYTES);
const _: () = assert!(std::mem::size_of::<Slot>() == SLOT_BYTES);

/// Why a heartbeat channel could not be created, opened or removed.
#[derive(Debug, thiserror::Error)]
pub enum HeartbeatError {
    #[error("cannot create heartbeat channel {path}: {source} (set {DIR_ENV} to a writable directory)")]
    Create { path: PathBuf, source: std::io::Error },
    #[error("cannot open heartbeat channel {path}: {source}")]
    Open { path: PathBuf, source: std::io::Error },
    #[error("cannot map heartbeat channel {path}: {source}")]
    Map { path: PathBuf, source: std::io::Error },
    #[error("channel {path} is not trusted: {detail}; it is ignored")]
    Untrusted { path: PathBuf, detail: String },
    #[error("cannot remove heartbeat channel {path}: {source}")]
    Remove { path: PathBuf, source: std::io::Error },
    #[error("{path} is not a pinlearn heartbeat channel (bad magic); remove the file")]
    BadMagic { path: PathBuf },
    #[error(
        "{path} uses heartbeat layout version {found}, this build reads version {VERSION}; use matching pinlearn and application builds"
    )]
    BadVersion { path: PathBuf, found: u32 },
    #[error("channel {path} is damaged: {detail}; it is ignored")]
    Corrupt { path: PathBuf, detail: String },
}

/// The directory holding heartbeat channels: `$PINLEARN_HEARTBEAT_DIR`, else
/// `/dev/shm`, else the system temporary directory.
pub fn channel_dir() -> PathBuf {
    match std::env::var_os(DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ if Path::new("/dev/shm").is_dir() => PathBuf::from("/dev/shm"),
        _ => std::env::temp_dir(),
    }
}

/// The channel file of process `pid` in `dir`.
pub fn channel_path_in(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("pinlearn-heartbeat-{pid}"))
}

/// The channel file of process `pid` in [`channel_dir`].
pub fn channel_path(pid: u32) -> PathBuf {
    channel_path_in(&channel_dir(), pid)
}

/// Removes the channel of process `pid` (call it once the process ended).
/// A channel that does not exist is not an error.
pub fn remove_channel(pid: u32) -> Result<(), HeartbeatError> {
    let path = channel_path(pid);
    remove_if_present(&path).map_err(|source| HeartbeatError::Remove { path, source })
}

/// Removes a file; one that is not there is not an error.
pub(crate) fn remove_if_present(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Removes the channels in `dir` that this user's processes left when they
/// were killed (no `atexit`): those of processes that no longer exist, or
/// whose pid now names a process started later. Called whenever a process
/// creates its channel (`keep`: that channel's pid), so killed programs'
/// files do not pile up.
pub fn remove_stale_channels(dir: &Path, keep: u32) {
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix("pinlearn-heartbeat-"))
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        if std::os::unix::fs::MetadataExt::uid(&meta) != me || pid == keep || pid == std::process::id() {
            continue;
        }
        let stale = match process_start_ticks(pid) {
            None => true,
            Some(live) => {
                let mut header = [0u8; HEADER_BYTES];
                let written = std::fs::File::open(entry.path())
                    .and_then(|file| std::os::unix::fs::FileExt::read_exact_at(&file, &mut header, 0))
                    .map(|()| u64::from_ne_bytes(header[24..32].try_into().expect("8 bytes")));
                matches!(written, Ok(start) if start != 0 && start != live)
            }
        };
        if stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Start time of process or thread `pid` in clock ticks since boot (field
/// 22 of its stat), or `None` when it is gone or unreadable.
///
/// Read from the thread's own `/proc/<pid>/task/<pid>/stat`: the same
/// start time as `/proc/<pid>/stat` (a process's is its first thread's),
/// without the kernel summing the CPU times of every thread of the process
/// for fields this never reads. With 1024 threads that sum made this call a
/// fifth of the manager's CPU time (called for each thread it pins).
pub fn process_start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces:
    // fields after the last ')' start at field 3.
    let after_comm = &stat[stat.rfind(')')? + 1..];
    after_comm.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// The kernel id of the calling thread.
fn current_tid() -> u32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    tid as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_start_ticks_are_readable_and_stable() {
        let pid = std::process::id();
        let first = process_start_ticks(pid).expect("own /proc/self/stat is readable");
        assert_eq!(process_start_ticks(pid), Some(first));
        assert_eq!(process_start_ticks(u32::MAX - 7), None);
    }

    #[test]
    fn start_ticks_of_a_process_and_of_a_thread_match_their_whole_stat() {
        // What journals written before the thread's own stat was read hold.
        let whole = |id: u32| -> u64 {
            let stat = std::fs::read_to_string(format!("/proc/{id}/stat")).unwrap();
            let after_comm = &stat[stat.rfind(')').unwrap() + 1..];
            after_comm.split_whitespace().nth(22 - 3).unwrap().parse().unwrap()
        };
        let pid = std::process::id();
        assert_eq!(process_start_ticks(pid), Some(whole(pid)));
        std::thread::sleep(std::time::Duration::from_millis(30));
        let (tid, ticks) = std::thread::spawn(move || {
            let tid = current_tid();
            (tid, (process_start_ticks(tid), whole(tid)))
        })
        .join()
        .unwrap();
        assert_ne!(tid, pid);
        assert_eq!(ticks.0, Some(ticks.1));
    }

    #[test]
    fn stale_channels_of_dead_processes_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let dead = channel_path_in(dir.path(), 4_000_000_000); // above any pid_max
        let own = channel_path_in(dir.path(), std::process::id());
        let other = dir.path().join("notes.txt");
        for path in [&dead, &own, &other] {
            std::fs::write(path, [0u8; HEADER_BYTES]).expect("write");
        }
        remove_stale_channels(dir.path(), std::process::id());
        assert!(!dead.exists(), "a dead process's channel is removed");
        assert!(own.exists() && other.exists(), "live channels and other files stay");
    }

    #[test]
    fn channel_path_names_the_pid() {
        let path = channel_path_in(Path::new("/x"), 42);
        assert_eq!(path, PathBuf::from("/x/pinlearn-heartbeat-42"));
    }
}
