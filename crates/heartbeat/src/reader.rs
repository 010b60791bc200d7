//! The reading side: another process's channel, read with `pread`.
//!
//! ```text
//!   HeartbeatReader::open(pid) ─► no file yet / stale file of an earlier pid ─► Ok(None), retry later
//!            │ file present
//!            ▼
//!   open O_NOFOLLOW|O_NONBLOCK; a regular file, owned by the process's user, writable by no one else;
//!   header: magic, version, slot count, size, pid ─► Err(HeartbeatError) if not trusted or damaged
//!            ▼
//!   read_into(&mut out) ─► pread header + slots; header unchanged, nothing cut off
//!                          ─► out = [(tid, count)] of occupied slots, or Err (ignore the channel)
//! ```
//!
//! Why `pread` and not a mapping: the file belongs to the supervised
//! program, which can truncate it at any time, and reading a mapped page
//! past the new end of a file raises SIGBUS in the reader. A `pread` of a
//! truncated file returns fewer bytes instead, which is checked on every
//! read. Copying 16 bytes a slot (16 KiB for the default 1024 slots) per
//! period costs next to nothing.

use crate::{
    HEADER_BYTES, HeartbeatError, MAGIC, MAX_SLOTS, SLOT_BYTES, VERSION, channel_dir, channel_path_in,
    process_start_ticks,
};
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A read-only view of one process's heartbeat channel.
pub struct HeartbeatReader {
    pid: u32,
    path: PathBuf,
    file: File,
    slot_count: u32,
    /// The header as validated when the channel was opened.
    header: [u8; HEADER_BYTES],
    /// Header and slots as last read.
    buffer: Vec<u8>,
}

/// The fields of a header, decoded from its bytes.
struct HeaderFields {
    magic: [u8; 8],
    version: u32,
    slot_count: u32,
    pid: u32,
    start_ticks: u64,
}

fn decode_header(bytes: &[u8; HEADER_BYTES]) -> HeaderFields {
    let u32_at = |at: usize| u32::from_ne_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    HeaderFields {
        magic: bytes[0..8].try_into().expect("8 bytes"),
        version: u32_at(8),
        slot_count: u32_at(12),
        pid: u32_at(16),
        start_ticks: u64::from_ne_bytes(bytes[24..32].try_into().expect("8 bytes")),
    }
}

impl HeartbeatReader {
    /// Opens the channel of process `pid` in [`channel_dir`]. `Ok(None)` means
    /// the process has not reported yet (no file, or only a stale file of an
    /// earlier process with the same pid): try again later.
    pub fn open(pid: u32) -> Result<Option<HeartbeatReader>, HeartbeatError> {
        HeartbeatReader::open_in(&channel_dir(), pid)
    }

    /// Like [`HeartbeatReader::open`], with the channel directory given.
    ///
    /// The file is trusted only when it is a regular file (not a link, FIFO
    /// or device), owned by the user the process runs as (the owner of
    /// `/proc/PID`; this process's user when the process is gone) and
    /// writable by nobody else.
    pub fn open_in(dir: &Path, pid: u32) -> Result<Option<HeartbeatReader>, HeartbeatError> {
        let path = channel_path_in(dir, pid);
        let Some((file, meta)) = open_trusted(&path, pid)? else {
            return Ok(None);
        };

        let mut header = [0u8; HEADER_BYTES];
        let read = file.read_at(&mut header, 0).map_err(|source| HeartbeatError::Open {
            path: path.clone(),
            source,
        })?;
        if read < HEADER_BYTES {
            let detail = format!("it is {read} bytes, a channel has a {HEADER_BYTES}-byte header");
            return Err(HeartbeatError::Corrupt { path, detail });
        }
        let fields = decode_header(&header);
        if fields.magic != MAGIC {
            return Err(HeartbeatError::BadMagic { path });
        }
        if fields.version != VERSION {
            return Err(HeartbeatError::BadVersion {
                path,
                found: fields.version,
            });
        }
        let needed = HEADER_BYTES + SLOT_BYTES * fields.slot_count as usize;
        if fields.slot_count == 0 || fields.slot_count > MAX_SLOTS || meta.len() < needed as u64 {
            let detail = format!(
                "its header announces {} slots, the file is {} bytes",
                fields.slot_count,
                meta.len()
            );
            return Err(HeartbeatError::Corrupt { path, detail });
        }
        if fields.pid != pid {
            let detail = format!("its header names pid {}, the file name pid {pid}", fields.pid);
            return Err(HeartbeatError::Corrupt { path, detail });
        }
        if fields.start_ticks != 0
            && process_start_ticks(pid).is_some_and(|live_start| live_start != fields.start_ticks)
        {
            return Ok(None);
        }
        Ok(Some(HeartbeatReader {
            pid,
            path,
            file,
            slot_count: fields.slot_count,
            header,
            buffer: vec![0; needed],
        }))
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
    /// in slot order. An error (the file was cut short or its header
    /// changed) means the channel can no longer be trusted: stop reading it.
    pub fn read_into(&mut self, out: &mut Vec<(u32, u64)>) -> Result<(), HeartbeatError> {
        out.clear();
        let read = self
            .file
            .read_at(&mut self.buffer, 0)
            .map_err(|source| HeartbeatError::Open {
                path: self.path.clone(),
                source,
            })?;
        if read < self.buffer.len() {
            let detail = format!(
                "it was cut to {read} bytes while read ({} slots need {})",
                self.slot_count,
                self.buffer.len()
            );
            return Err(HeartbeatError::Corrupt {
                path: self.path.clone(),
                detail,
            });
        }
        if self.buffer[..HEADER_BYTES] != self.header {
            let detail = "its header changed while read".to_string();
            return Err(HeartbeatError::Corrupt {
                path: self.path.clone(),
                detail,
            });
        }
        for slot in self.buffer[HEADER_BYTES..].chunks_exact(SLOT_BYTES) {
            let tid = u32::from_ne_bytes(slot[0..4].try_into().expect("4 bytes"));
            if tid != 0 {
                out.push((tid, u64::from_ne_bytes(slot[8..16].try_into().expect("8 bytes"))));
            }
        }
        Ok(())
    }
}

/// Opens the channel file at `path` of process `pid` for reading, if it
/// exists and is trusted: a regular file (not a link, FIFO or device),
/// owned by the user the process runs as (the owner of `/proc/PID`; this
/// process's user when the process is gone) and writable by nobody else.
pub(crate) fn open_trusted(path: &Path, pid: u32) -> Result<Option<(File, std::fs::Metadata)>, HeartbeatError> {
    let path = path.to_path_buf();
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            let detail = "it is a symbolic link".to_string();
            return Err(HeartbeatError::Untrusted { path, detail });
        }
        Err(source) => return Err(HeartbeatError::Open { path, source }),
    };
    let meta = match file.metadata() {
        Ok(meta) => meta,
        Err(source) => return Err(HeartbeatError::Open { path, source }),
    };
    if !meta.file_type().is_file() {
        let detail = "it is not a regular file".to_string();
        return Err(HeartbeatError::Untrusted { path, detail });
    }
    let expected_owner = std::fs::metadata(format!("/proc/{pid}"))
        .map(|proc_dir| proc_dir.uid())
        // SAFETY: geteuid cannot fail and has no preconditions.
        .unwrap_or_else(|_| unsafe { libc::geteuid() });
    if meta.uid() != expected_owner {
        let detail = format!(
            "it is owned by user {}, the process runs as user {expected_owner}",
            meta.uid()
        );
        return Err(HeartbeatError::Untrusted { path, detail });
    }
    if meta.mode() & 0o022 != 0 {
        let detail = format!("other users may write it (mode {:o})", meta.mode() & 0o777);
        return Err(HeartbeatError::Untrusted { path, detail });
    }
    Ok(Some((file, meta)))
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
        let pid = std::process::id();
        let mut bytes = header_bytes(b"PLHBEAT1", 1, 4, pid, 0);
        set_slot(&mut bytes, 1, 77, 1_000_000_000_007);
        set_slot(&mut bytes, 3, 78, 0);
        std::fs::write(channel_path_in(dir.path(), pid), &bytes).expect("write");
        let mut reader = HeartbeatReader::open_in(dir.path(), pid)
            .expect("valid")
            .expect("present");
        let mut out = vec![(1, 1)];
        reader.read_into(&mut out).expect("readable");
        assert_eq!(out, vec![(77, 1_000_000_000_007), (78, 0)]);
    }

    #[test]
    fn a_channel_cut_short_or_rewritten_while_open_is_an_error_not_a_crash() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let pid = std::process::id();
        let path = channel_path_in(dir.path(), pid);
        let mut bytes = header_bytes(b"PLHBEAT1", 1, 1024, pid, 0);
        set_slot(&mut bytes, 1000, 77, 5);
        std::fs::write(&path, &bytes).expect("write");
        let mut reader = HeartbeatReader::open_in(dir.path(), pid)
            .expect("valid")
            .expect("present");
        let mut out = Vec::new();
        reader.read_into(&mut out).expect("readable");
        assert_eq!(out, vec![(77, 5)]);

        // Truncated by its program: a mapping would raise SIGBUS here.
        File::options()
            .write(true)
            .open(&path)
            .expect("open")
            .set_len(100)
            .expect("truncate");
        let error = reader.read_into(&mut out).expect_err("cut short");
        assert!(error.to_string().contains("cut to 100 bytes"), "{error}");
        assert!(out.is_empty());

        // Rewritten with another header of the same size.
        std::fs::write(&path, header_bytes(b"PLHBEAT1", 1, 1024, pid + 1, 0)).expect("write");
        let error = reader.read_into(&mut out).expect_err("header changed");
        assert!(error.to_string().contains("header changed"), "{error}");
    }

    #[test]
    fn channels_other_users_could_write_are_not_trusted() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let pid = std::process::id();
        let path = channel_path_in(dir.path(), pid);
        std::fs::write(&path, header_bytes(b"PLHBEAT1", 1, 4, pid, 0)).expect("write");
        let open = || HeartbeatReader::open_in(dir.path(), pid);
        assert!(open().expect("valid").is_some());

        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        let error = open().expect_err("world-writable");
        assert!(
            error.to_string().contains("other users may write it (mode 666)"),
            "{error}"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");

        // Planted by another user (needs root to give the file away).
        // SAFETY: geteuid cannot fail and has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&path, Some(65534), None).expect("chown");
            let error = open().expect_err("another user's file");
            assert!(error.to_string().contains("owned by user 65534"), "{error}");
            std::os::unix::fs::chown(&path, Some(0), None).expect("chown");
        } else {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI runs as root: the other-owner case must run"
            );
            println!("skipped the other-owner case: giving a file away needs root");
        }

        // A symbolic link, or a FIFO a reader would block on.
        std::fs::remove_file(&path).expect("remove");
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, header_bytes(b"PLHBEAT1", 1, 4, pid, 0)).expect("write");
        std::os::unix::fs::symlink(&target, &path).expect("symlink");
        assert!(open().expect_err("link").to_string().contains("symbolic link"));
        std::fs::remove_file(&path).expect("remove");
        let fifo = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("no NUL");
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0, "mkfifo");
        assert!(open().expect_err("fifo").to_string().contains("not a regular file"));
    }

    #[test]
    fn damaged_headers_are_rejected_with_the_reason() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let pid = std::process::id();
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
