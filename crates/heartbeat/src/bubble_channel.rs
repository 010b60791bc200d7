//! The bubble channel: the bubbles a program declares (paper 001's API),
//! sent to a pinlearn that supervises it from outside (`pinlearn run` or
//! `attach`), under the same rules as the heartbeat channel.
//!
//! ```text
//!   program (pid P)                                   pinlearn (another process)
//!   pinlearn_connect() ─► BubbleChannelWriter::create ─► $DIR/pinlearn-bubbles-P (0600)
//!   pinlearn_bubble_create / insert / ... (checked in the program first)
//!        └─► append(BubbleOp): one 64-byte record ──► BubbleChannelReader::read_new, every period:
//!                                                     trusted file, header unchanged, whole
//!                                                     records only, each decoded and checked
//!                                                     ─► the engine's declared bubbles
//! ```
//!
//! # File layout (ABI, version 1)
//!
//! Native-endian. A 32-byte header: magic `PLBUBBL1`, version u32 = 1,
//! record size u32 = 64, pid u32, pad u32, start_ticks u64 (as the heartbeat
//! channel: a file whose start time is not the live process's is stale).
//! Then records, appended and never rewritten:
//!
//! ```text
//!   offset  size  field
//!   0       4     op        u32: 1 create, 2 insert thread, 3 remove thread, 4 insert bubble,
//!                           5 priority, 6 burst level, 7 load, 8 shake, 9 wake up,
//!                           10 a thread's load
//!   4       4     bubble    u32: the bubble (create: the new bubble's number);
//!                           a thread's load: 1 if set, 0 for its measured load
//!   8       8     arg       i64: create: parent + 1 (0: the root); threads: the tid;
//!                           insert bubble: the child; priority; load: 1 if set, 0 for its threads'
//!   16      8     value     f64: load
//!   24      4     text_len  u32: bytes of text used (0 ..= 32)
//!   28      4     pad       0
//!   32      32    text      create: the name; burst level: the level name (empty: none)
//! ```
//!
//! The writer appends a whole record with one `write(2)` under a lock, so a
//! reader sees whole records or a shorter file; the reader uses `pread`
//! (never a mapping: the program can truncate the file), checks the header
//! on every read, takes whole records only, at most [`MAX_RECORDS_PER_READ`]
//! per read, and treats a file that shrank, a changed header or a record
//! that does not decode as a channel to ignore from then on.

use crate::reader::open_trusted;
use crate::{HeartbeatError, channel_dir, process_start_ticks};
use std::fs::{File, OpenOptions, Permissions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// First 8 bytes of every bubble channel.
pub const BUBBLE_MAGIC: [u8; 8] = *b"PLBUBBL1";
/// Layout version of the bubble channel.
pub const BUBBLE_VERSION: u32 = 1;
/// Bytes of the header.
pub const BUBBLE_HEADER_BYTES: usize = 32;
/// Bytes of one record.
pub const RECORD_BYTES: usize = 64;
/// Longest name or level name a record carries, in bytes.
pub const RECORD_TEXT_BYTES: usize = 32;
/// Most records a channel may hold (64 MiB).
pub const MAX_RECORDS: u64 = 1 << 20;
/// Most records taken by one read (the rest wait for the next one).
pub const MAX_RECORDS_PER_READ: usize = 4096;

/// One declaration, as sent.
#[derive(Clone, Debug, PartialEq)]
pub enum BubbleOp {
    Create {
        bubble: u32,
        parent: Option<u32>,
        name: String,
    },
    InsertThread {
        bubble: u32,
        tid: u32,
    },
    RemoveThread {
        tid: u32,
    },
    InsertBubble {
        bubble: u32,
        child: u32,
    },
    SetPriority {
        bubble: u32,
        priority: i32,
    },
    SetBurst {
        bubble: u32,
        level: Option<String>,
    },
    SetLoad {
        bubble: u32,
        load: Option<f64>,
    },
    Shake,
    WakeUp {
        bubble: u32,
    },
    /// A thread's load instead of its measured one (`None`: measured again).
    SetThreadLoad {
        tid: u32,
        load: Option<f64>,
    },
}

impl BubbleOp {
    /// The record of this declaration; an error when its text is longer
    /// than [`RECORD_TEXT_BYTES`].
    pub fn encode(&self) -> Result<[u8; RECORD_BYTES], String> {
        let (op, bubble, arg, value, text): (u32, u32, i64, f64, &str) = match self {
            BubbleOp::Create { bubble, parent, name } => {
                (1, *bubble, parent.map_or(0, |p| i64::from(p) + 1), 0.0, name)
            }
            BubbleOp::InsertThread { bubble, tid } => (2, *bubble, i64::from(*tid), 0.0, ""),
            BubbleOp::RemoveThread { tid } => (3, 0, i64::from(*tid), 0.0, ""),
            BubbleOp::InsertBubble { bubble, child } => (4, *bubble, i64::from(*child), 0.0, ""),
            BubbleOp::SetPriority { bubble, priority } => (5, *bubble, i64::from(*priority), 0.0, ""),
            BubbleOp::SetBurst { bubble, level } => (6, *bubble, 0, 0.0, level.as_deref().unwrap_or("")),
            BubbleOp::SetLoad { bubble, load } => (7, *bubble, i64::from(load.is_some()), load.unwrap_or(0.0), ""),
            BubbleOp::Shake => (8, 0, 0, 0.0, ""),
            BubbleOp::WakeUp { bubble } => (9, *bubble, 0, 0.0, ""),
            BubbleOp::SetThreadLoad { tid, load } => {
                (10, u32::from(load.is_some()), i64::from(*tid), load.unwrap_or(0.0), "")
            }
        };
        if text.len() > RECORD_TEXT_BYTES {
            return Err(format!(
                "{text:?} is {} bytes; names sent to a pinlearn outside the program are at most {RECORD_TEXT_BYTES}",
                text.len()
            ));
        }
        let mut record = [0u8; RECORD_BYTES];
        record[0..4].copy_from_slice(&op.to_ne_bytes());
        record[4..8].copy_from_slice(&bubble.to_ne_bytes());
        record[8..16].copy_from_slice(&arg.to_ne_bytes());
        record[16..24].copy_from_slice(&value.to_ne_bytes());
        record[24..28].copy_from_slice(&(text.len() as u32).to_ne_bytes());
        record[32..32 + text.len()].copy_from_slice(text.as_bytes());
        Ok(record)
    }

    /// The declaration a record holds, or why it holds none.
    pub fn decode(record: &[u8; RECORD_BYTES]) -> Result<BubbleOp, String> {
        let u32_at = |at: usize| u32::from_ne_bytes(record[at..at + 4].try_into().expect("4 bytes"));
        let (op, bubble) = (u32_at(0), u32_at(4));
        let arg = i64::from_ne_bytes(record[8..16].try_into().expect("8 bytes"));
        let value = f64::from_ne_bytes(record[16..24].try_into().expect("8 bytes"));
        let text_len = u32_at(24) as usize;
        if text_len > RECORD_TEXT_BYTES || u32_at(28) != 0 {
            return Err(format!("text length {text_len} or padding out of range"));
        }
        let text = std::str::from_utf8(&record[32..32 + text_len])
            .map_err(|_| "its text is not UTF-8".to_string())?
            .to_string();
        let tid = || {
            u32::try_from(arg)
                .ok()
                .filter(|&t| t > 0)
                .ok_or(format!("thread id {arg}"))
        };
        let number = || u32::try_from(arg).map_err(|_| format!("bubble number {arg}"));
        Ok(match op {
            1 => BubbleOp::Create {
                bubble,
                parent: match arg {
                    0 => None,
                    a => Some(u32::try_from(a - 1).map_err(|_| format!("parent {arg}"))?),
                },
                name: text,
            },
            2 => BubbleOp::InsertThread { bubble, tid: tid()? },
            3 => BubbleOp::RemoveThread { tid: tid()? },
            4 => BubbleOp::InsertBubble {
                bubble,
                child: number()?,
            },
            5 => BubbleOp::SetPriority {
                bubble,
                priority: i32::try_from(arg).map_err(|_| format!("priority {arg}"))?,
            },
            6 => BubbleOp::SetBurst {
                bubble,
                level: (!text.is_empty()).then_some(text),
            },
            7 => BubbleOp::SetLoad {
                bubble,
                load: match arg {
                    0 => None,
                    1 => Some(value),
                    _ => return Err(format!("load flag {arg}")),
                },
            },
            8 => BubbleOp::Shake,
            9 => BubbleOp::WakeUp { bubble },
            10 => BubbleOp::SetThreadLoad {
                tid: tid()?,
                load: match bubble {
                    0 => None,
                    1 => Some(value),
                    _ => return Err(format!("load flag {bubble}")),
                },
            },
            other => return Err(format!("unknown operation {other}")),
        })
    }
}

/// The bubble channel file of process `pid` in `dir`.
pub fn bubble_channel_path_in(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("pinlearn-bubbles-{pid}"))
}

/// Removes the bubble channel of process `pid` in [`channel_dir`] (once
/// the process ended); one that does not exist is not an error.
pub fn remove_bubble_channel(pid: u32) -> Result<(), HeartbeatError> {
    let path = bubble_channel_path_in(&channel_dir(), pid);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(HeartbeatError::Remove { path, source }),
    }
}

fn header(pid: u32, start_ticks: u64) -> [u8; BUBBLE_HEADER_BYTES] {
    let mut header = [0u8; BUBBLE_HEADER_BYTES];
    header[0..8].copy_from_slice(&BUBBLE_MAGIC);
    header[8..12].copy_from_slice(&BUBBLE_VERSION.to_ne_bytes());
    header[12..16].copy_from_slice(&(RECORD_BYTES as u32).to_ne_bytes());
    header[16..20].copy_from_slice(&pid.to_ne_bytes());
    header[24..32].copy_from_slice(&start_ticks.to_ne_bytes());
    header
}

/// The program's side: its channel, removed when dropped.
#[derive(Debug)]
pub struct BubbleChannelWriter {
    path: PathBuf,
    /// The file and the records written so far.
    file: Mutex<(File, u64)>,
}

impl BubbleChannelWriter {
    /// Creates (or replaces) the channel of this process in [`channel_dir`].
    pub fn create() -> Result<Self, HeartbeatError> {
        Self::create_in(&channel_dir(), std::process::id())
    }

    /// Creates (or replaces) the channel of `pid` in `dir`.
    pub fn create_in(dir: &Path, pid: u32) -> Result<Self, HeartbeatError> {
        let path = bubble_channel_path_in(dir, pid);
        let tmp = dir.join(format!(".pinlearn-bubbles-{pid}.tmp"));
        let failed = |source| HeartbeatError::Create {
            path: path.clone(),
            source,
        };
        crate::remove_if_present(&tmp).map_err(failed)?;
        let mut file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC)
            .open(&tmp)
            .map_err(failed)?;
        let written = file
            .set_permissions(Permissions::from_mode(0o600))
            .and_then(|()| file.write_all(&header(pid, process_start_ticks(pid).unwrap_or(0))))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(failed(e));
        }
        Ok(BubbleChannelWriter {
            path,
            file: Mutex::new((file, 0)),
        })
    }

    /// The channel file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one declaration.
    pub fn append(&self, op: &BubbleOp) -> Result<(), String> {
        let record = op.encode()?;
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if file.1 >= MAX_RECORDS {
            return Err(format!(
                "the bubble channel {} holds {MAX_RECORDS} declarations already",
                self.path.display()
            ));
        }
        file.0
            .write_all(&record)
            .map_err(|e| format!("cannot write the bubble channel {}: {e}", self.path.display()))?;
        file.1 += 1;
        Ok(())
    }
}

impl Drop for BubbleChannelWriter {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// pinlearn's side: new declarations of one process, read with `pread`.
#[derive(Debug)]
pub struct BubbleChannelReader {
    path: PathBuf,
    file: File,
    header: [u8; BUBBLE_HEADER_BYTES],
    /// Records taken so far.
    taken: u64,
}

impl BubbleChannelReader {
    /// Opens the channel of process `pid` in [`channel_dir`]; `Ok(None)`:
    /// none yet (or a stale one of an earlier process with that pid).
    pub fn open(pid: u32) -> Result<Option<Self>, HeartbeatError> {
        Self::open_in(&channel_dir(), pid)
    }

    /// [`Self::open`] in `dir`; trusted as the heartbeat channel is.
    pub fn open_in(dir: &Path, pid: u32) -> Result<Option<Self>, HeartbeatError> {
        let path = bubble_channel_path_in(dir, pid);
        let Some((file, _)) = open_trusted(&path, pid)? else {
            return Ok(None);
        };
        let mut header = [0u8; BUBBLE_HEADER_BYTES];
        let read = file.read_at(&mut header, 0).map_err(|source| HeartbeatError::Open {
            path: path.clone(),
            source,
        })?;
        let corrupt = |detail: String| HeartbeatError::Corrupt {
            path: path.clone(),
            detail,
        };
        if read < BUBBLE_HEADER_BYTES {
            return Err(corrupt(format!(
                "it is {read} bytes, a bubble channel has a {BUBBLE_HEADER_BYTES}-byte header"
            )));
        }
        let u32_at = |at: usize| u32::from_ne_bytes(header[at..at + 4].try_into().expect("4 bytes"));
        if header[0..8] != BUBBLE_MAGIC {
            return Err(HeartbeatError::BadMagic { path });
        }
        if u32_at(8) != BUBBLE_VERSION || u32_at(12) != RECORD_BYTES as u32 {
            return Err(corrupt(format!(
                "layout version {} with {}-byte records, this build reads version {BUBBLE_VERSION} with {RECORD_BYTES}",
                u32_at(8),
                u32_at(12)
            )));
        }
        if u32_at(16) != pid {
            return Err(corrupt(format!(
                "its header names pid {}, the file name pid {pid}",
                u32_at(16)
            )));
        }
        let start_ticks = u64::from_ne_bytes(header[24..32].try_into().expect("8 bytes"));
        if start_ticks != 0 && process_start_ticks(pid).is_some_and(|live| live != start_ticks) {
            return Ok(None);
        }
        Ok(Some(BubbleChannelReader {
            path,
            file,
            header,
            taken: 0,
        }))
    }

    /// The channel file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends to `out` the declarations written since the last read (at
    /// most [`MAX_RECORDS_PER_READ`]). An error means the channel can no
    /// longer be trusted: stop reading it.
    pub fn read_new(&mut self, out: &mut Vec<BubbleOp>) -> Result<(), HeartbeatError> {
        let corrupt = |detail: String| HeartbeatError::Corrupt {
            path: self.path.clone(),
            detail,
        };
        let len = self
            .file
            .metadata()
            .map_err(|source| HeartbeatError::Open {
                path: self.path.clone(),
                source,
            })?
            .len();
        let taken_end = BUBBLE_HEADER_BYTES as u64 + self.taken * RECORD_BYTES as u64;
        if len < taken_end {
            return Err(corrupt(format!(
                "it shrank to {len} bytes under {} records read",
                self.taken
            )));
        }
        let whole = ((len - taken_end) / RECORD_BYTES as u64).min(MAX_RECORDS_PER_READ as u64);
        if self.taken + whole > MAX_RECORDS {
            return Err(corrupt(format!("it holds more than {MAX_RECORDS} records")));
        }
        let mut buffer = vec![0u8; BUBBLE_HEADER_BYTES + whole as usize * RECORD_BYTES];
        let (head, records) = buffer.split_at_mut(BUBBLE_HEADER_BYTES);
        let read_header = self.file.read_at(head, 0);
        let read_records = self.file.read_at(records, taken_end);
        match (read_header, read_records) {
            (Ok(h), Ok(r)) if h == BUBBLE_HEADER_BYTES && r == records.len() => {}
            (Err(source), _) | (_, Err(source)) => {
                return Err(HeartbeatError::Open {
                    path: self.path.clone(),
                    source,
                });
            }
            _ => return Err(corrupt("it was cut while read".into())),
        }
        if *head != self.header {
            return Err(corrupt("its header changed".into()));
        }
        for (i, record) in records.chunks_exact(RECORD_BYTES).enumerate() {
            let record: &[u8; RECORD_BYTES] = record.try_into().expect("whole records");
            let op =
                BubbleOp::decode(record).map_err(|why| corrupt(format!("record {}: {why}", self.taken + i as u64)))?;
            out.push(op);
        }
        self.taken += whole;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_op() -> Vec<BubbleOp> {
        vec![
            BubbleOp::Create {
                bubble: 0,
                parent: None,
                name: "job".into(),
            },
            BubbleOp::Create {
                bubble: 1,
                parent: Some(0),
                name: "n".repeat(RECORD_TEXT_BYTES),
            },
            BubbleOp::InsertThread { bubble: 1, tid: 77 },
            BubbleOp::RemoveThread { tid: 77 },
            BubbleOp::InsertBubble { bubble: 0, child: 1 },
            BubbleOp::SetPriority {
                bubble: 1,
                priority: -3,
            },
            BubbleOp::SetBurst {
                bubble: 0,
                level: Some("node".into()),
            },
            BubbleOp::SetBurst { bubble: 0, level: None },
            BubbleOp::SetLoad {
                bubble: 1,
                load: Some(2.5),
            },
            BubbleOp::SetLoad { bubble: 1, load: None },
            BubbleOp::Shake,
            BubbleOp::WakeUp { bubble: 0 },
            BubbleOp::SetThreadLoad {
                tid: 78,
                load: Some(0.0),
            },
            BubbleOp::SetThreadLoad { tid: 78, load: None },
        ]
    }

    #[test]
    fn every_declaration_reads_back_as_written() {
        for op in every_op() {
            assert_eq!(BubbleOp::decode(&op.encode().unwrap()), Ok(op.clone()));
        }
        let long = BubbleOp::Create {
            bubble: 0,
            parent: None,
            name: "x".repeat(RECORD_TEXT_BYTES + 1),
        };
        assert!(long.encode().unwrap_err().contains("at most 32"));
    }

    #[test]
    fn records_written_are_read_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let pid = std::process::id();
        let writer = BubbleChannelWriter::create_in(dir.path(), pid).unwrap();
        let mut reader = BubbleChannelReader::open_in(dir.path(), pid).unwrap().unwrap();
        let mut out = Vec::new();
        reader.read_new(&mut out).unwrap();
        assert!(out.is_empty());
        let ops = every_op();
        for op in &ops[..5] {
            writer.append(op).unwrap();
        }
        reader.read_new(&mut out).unwrap();
        for op in &ops[5..] {
            writer.append(op).unwrap();
        }
        reader.read_new(&mut out).unwrap();
        assert_eq!(out, ops);
        let path = writer.path().to_path_buf();
        drop(writer);
        assert!(!path.exists(), "the writer removes its channel");
    }

    #[test]
    fn a_damaged_or_foreign_channel_is_an_error_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let pid = std::process::id();
        let path = bubble_channel_path_in(dir.path(), pid);
        let message = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            std::fs::set_permissions(&path, Permissions::from_mode(0o600)).unwrap();
            BubbleChannelReader::open_in(dir.path(), pid).unwrap_err().to_string()
        };
        assert!(message(b"PLBUB").contains("32-byte header"));
        assert!(message(&[7u8; 64]).contains("bad magic"));
        let mut wrong_pid = header(pid + 1, 0).to_vec();
        assert!(message(&wrong_pid).contains("names pid"));
        wrong_pid[16..20].copy_from_slice(&pid.to_ne_bytes());
        wrong_pid[12..16].copy_from_slice(&32u32.to_ne_bytes());
        assert!(message(&wrong_pid).contains("32-byte records"));

        // Cut, changed or garbage while being read.
        let writer = BubbleChannelWriter::create_in(dir.path(), pid).unwrap();
        let mut reader = BubbleChannelReader::open_in(dir.path(), pid).unwrap().unwrap();
        writer.append(&BubbleOp::Shake).unwrap();
        let file = OpenOptions::new().write(true).open(writer.path()).unwrap();
        file.set_len(40).unwrap();
        let mut out = Vec::new();
        reader.read_new(&mut out).expect("a partial record waits");
        assert!(out.is_empty());
        file.set_len(BUBBLE_HEADER_BYTES as u64 + 64).unwrap();
        file.write_at(&[0xff; 64], BUBBLE_HEADER_BYTES as u64).unwrap();
        let err = reader.read_new(&mut out).unwrap_err().to_string();
        assert!(err.contains("record 0"), "{err}");
        let mut reader = BubbleChannelReader::open_in(dir.path(), pid).unwrap().unwrap();
        file.write_at(&BubbleOp::Shake.encode().unwrap(), BUBBLE_HEADER_BYTES as u64)
            .unwrap();
        reader.read_new(&mut out).unwrap();
        file.set_len(8).unwrap();
        let err = reader.read_new(&mut out).unwrap_err().to_string();
        assert!(err.contains("shrank"), "{err}");
        assert!(!err.contains('\n'));
        std::fs::set_permissions(writer.path(), Permissions::from_mode(0o622)).unwrap();
        let err = BubbleChannelReader::open_in(dir.path(), pid).unwrap_err().to_string();
        assert!(err.contains("other users may write it"), "{err}");
    }
}
