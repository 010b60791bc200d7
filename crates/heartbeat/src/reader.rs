//! The reading side: another process's channel, mapped read-only.
//!
//! ```text
//!   HeartbeatReader::open(pid) ─► no file yet / stale file of an earlier pid ─► Ok(None), retry later
//!            │ file present
//!            ▼
//!   mmap PROT_READ, check magic, version, slot count, size, pid ─► Err(HeartbeatError) if damaged
//!            ▼
//!   read_into(&mut out) ─► out = [(tid, count)] of occupied slots   (loads only; the writer never waits)
//! ```

use crate::{
    HEADER_BYTES, Header, HeartbeatError, MAGIC, MAX_SLOTS, SLOT_BYTES, Slot, VERSION, channel_dir, channel_path_in,
    process_start_ticks,
};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::ptr::{self, NonNull};
use std::sync::atomic::Ordering;

/// A read-only view of one process's heartbeat channel.
pub struct HeartbeatReader {
    pid: u32,
    path: PathBuf,
    base: NonNull<u8>,
    len: usize,
    slot_count: u32,
}

// SAFETY: the mapping is read-only and only read through atomic loads (slots)
// or after validation of an immutable header.
unsafe impl Send for HeartbeatReader {}
unsafe impl Sync for HeartbeatReader {}

impl HeartbeatReader {
    /// Opens the channel of process `pid` in [`channel_dir`]. `Ok(None)` means
    /// the process has not reported yet (no file, or only a stale file of an
    /// earlier process with the same pid): try again later.
    pub fn open(pid: u32) -> Result<Option<HeartbeatReader>, HeartbeatError> {
        HeartbeatReader::open_in(&channel_dir(), pid)
    }

    /// Like [`HeartbeatReader::open`], with the channel directory given.
    pub fn open_in(dir: &Path, pid: u32) -> Result<Option<HeartbeatReader>, HeartbeatError> {
        let path = channel_path_in(dir, pid);
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(HeartbeatError::Open { path, source }),
        };
        let file_len = match file.metadata() {
            Ok(meta) => meta.len(),
            Err(source) => return Err(HeartbeatError::Open { path, source }),
        };
        let len = match usize::try_from(file_len) {
            Ok(len) if len >= HEADER_BYTES => len,
            _ => {
                let detail = format!("it is {file_len} bytes, a channel has a {HEADER_BYTES}-byte header");
                return Err(HeartbeatError::Corrupt { path, detail });
            }
        };
        // SAFETY: mapping `len` bytes of a file that is at least that long, read-only.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            let source = std::io::Error::last_os_error();
            return Err(HeartbeatError::Map { path, source });
        }
        let base = NonNull::new(base.cast::<u8>()).expect("mmap never returns null on success");
        // slot_count stays 0 until the header is validated; Drop unmaps on every error path.
        let mut reader = HeartbeatReader {
            pid,
            path,
            base,
            len,
            slot_count: 0,
        };
        // SAFETY: the mapping holds at least a header, page aligned; Header is plain data.
        let header = unsafe { ptr::read(reader.base.as_ptr().cast::<Header>()) };
        if header.magic != MAGIC {
            return Err(HeartbeatError::BadMagic {
                path: reader.path.clone(),
            });
        }
        if header.version != VERSION {
            return Err(HeartbeatError::BadVersion {
                path: reader.path.clone(),
                found: header.version,
            });
        }
        let needed = HEADER_BYTES + SLOT_BYTES * header.slot_count as usize;
        if header.slot_count == 0 || header.slot_count > MAX_SLOTS || len < needed {
            let detail = format!(
                "its header announces {} slots, the file is {len} bytes",
                header.slot_count
            );
            return Err(HeartbeatError::Corrupt {
                path: reader.path.clone(),
                detail,
            });
        }
        if header.pid != pid {
            let detail = format!("its header names pid {}, the file name pid {pid}", header.pid);
            return Err(HeartbeatError::Corrupt {
                path: reader.path.clone(),
                detail,
            });
        }
        if header.start_ticks != 0
            && process_start_ticks(pid).is_some_and(|live_start| live_start != header.start_ticks)
        {
            return Ok(None);
        }
        reader.slot_count = header.slot_count;
        Ok(Some(reader))
    }

    /// The process whose channel this is.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The channel file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of slots in the channel (the most threads it can report).
    pub fn slot_count(&self) -> u32 {
        self.slot_count
    }

    /// Clears `out` and fills it with `(tid, count)` for every occupied slot,
    /// in slot order.
    pub fn read_into(&self, out: &mut Vec<(u32, u64)>) {
        out.clear();
        for slot in self.slots() {
            let tid = slot.tid.load(Ordering::Acquire);
            if tid == 0 {
                continue;
            }
            let count = slot.count.load(Ordering::Acquire);
            if slot.tid.load(Ordering::Relaxed) == tid {
                out.push((tid, count));
            }
        }
    }

    fn slots(&self) -> &[Slot] {
        // SAFETY: validated in open_in: the mapping holds slot_count slots after
        // the header; atomic loads on read-only memory are fine for lock-free
        // 32/64-bit atomics.
        unsafe {
            std::slice::from_raw_parts(
                self.base.as_ptr().add(HEADER_BYTES).cast::<Slot>(),
                self.slot_count as usize,
            )
        }
    }
}

impl Drop for HeartbeatReader {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what open_in mapped; slices borrowed from
        // it do not outlive &self.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

impl std::fmt::Debug for HeartbeatReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeartbeatReader")
            .field("pid", &self.pid)
            .field("path", &self.path)
            .field("slot_count", &self.slot_count)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_bytes(magic: &[u8; 8], version: u32, slot_count: u32, pid: u32, start_ticks: u64) -> Vec<u8> {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(magic);
        bytes.extend_from_slice(&version.to_ne_bytes());
        bytes.extend_from_slice(&slot_count.to_ne_bytes());
        bytes.extend_from_slice(&pid.to_ne_bytes());
        bytes.extend_from_slice(&0u32.to_ne_bytes());
        bytes.extend_from_slice(&start_ticks.to_ne_bytes());
        bytes.resize(HEADER_BYTES + SLOT_BYTES * slot_count as usize, 0);
        bytes
    }

    /// Writes slot `index` = {tid, count} into a file image made by `header_bytes`.
    fn set_slot(bytes: &mut [u8], index: usize, tid: u32, count: u64) {
        let at = HEADER_BYTES + SLOT_BYTES * index;
        bytes[at..at + 4].copy_from_slice(&tid.to_ne_bytes());
        bytes[at + 8..at + 16].copy_from_slice(&count.to_ne_bytes());
    }

    #[test]
    fn missing_channel_reads_as_absent() {
        let dir = tempfile::tempdir().expect("temporary directory");
        assert!(HeartbeatReader::open_in(dir.path(), 12345).expect("no error").is_none());
    }

    #[test]
    fn reads_the_documented_layout() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let pid = u32::MAX - 3;
        let mut bytes = header_bytes(b"PLHBEAT1", 1, 4, pid, 0);
        set_slot(&mut bytes, 1, 77, 1_000_000_000_007);
        set_slot(&mut bytes, 3, 78, 0);
        std::fs::write(channel_path_in(dir.path(), pid), &bytes).expect("write");
        let reader = HeartbeatReader::open_in(dir.path(), pid)
            .expect("valid")
            .expect("present");
        let mut out = vec![(1, 1)];
        reader.read_into(&mut out);
        assert_eq!(out, vec![(77, 1_000_000_000_007), (78, 0)]);
    }

    #[test]
    fn damaged_headers_are_rejected_with_the_reason() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let pid = u32::MAX - 4;
        let path = channel_path_in(dir.path(), pid);
        let open = || HeartbeatReader::open_in(dir.path(), pid);

        std::fs::write(&path, header_bytes(b"PLHBEAT1", 2, 4, pid, 0)).expect("write");
        assert!(matches!(open(), Err(HeartbeatError::BadVersion { found: 2, .. })));

        std::fs::write(&path, header_bytes(b"XXHBEAT1", 1, 4, pid, 0)).expect("write");
        assert!(matches!(open(), Err(HeartbeatError::BadMagic { .. })));

        let mut short = header_bytes(b"PLHBEAT1", 1, 4, pid, 0);
        short.truncate(HEADER_BYTES + SLOT_BYTES * 3);
        std::fs::write(&path, short).expect("write");
        assert!(matches!(open(), Err(HeartbeatError::Corrupt { .. })));

        std::fs::write(&path, b"PLHB").expect("write");
        assert!(matches!(open(), Err(HeartbeatError::Corrupt { .. })));

        std::fs::write(&path, header_bytes(b"PLHBEAT1", 1, 4, pid + 1, 0)).expect("write");
        assert!(matches!(open(), Err(HeartbeatError::Corrupt { .. })));
    }

    #[test]
    fn file_of_an_earlier_process_with_the_same_pid_reads_as_absent() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let pid = std::process::id();
        let start = process_start_ticks(pid).expect("own start time");
        let path = channel_path_in(dir.path(), pid);

        std::fs::write(&path, header_bytes(b"PLHBEAT1", 1, 2, pid, start + 1)).expect("write");
        assert!(
            HeartbeatReader::open_in(dir.path(), pid)
                .expect("stale is not an error")
                .is_none()
        );

        std::fs::write(&path, header_bytes(b"PLHBEAT1", 1, 2, pid, start)).expect("write");
        assert!(HeartbeatReader::open_in(dir.path(), pid).expect("valid").is_some());
    }
}
