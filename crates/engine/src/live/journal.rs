//! The journal of original masks: what lets the masks come back when the
//! manager itself dies (SIGKILL, a crash), through the watchdog or
//! `pinlearn restore PID`.
//!
//! ```text
//!   Journal::create(target)   $RUNTIME/journal-TARGET, mode 0600, first line: header (manager pid)
//!        │  (a journal left by a manager that died is restored first)
//!   record(tid, original)     one line "TID START_TICKS CPULIST", written before the first change
//!        │                    of that thread's mask
//!   forget(tid)               "TID forget": its mask is its own again (restored, or chosen by its
//!        │                    program); the journal is rewritten when mostly such lines
//!   finish()                  every mask restored: the file is removed
//!
//!   restore(path)             manager gone: every thread still alive with the same start time
//!                             gets its original mask back (a reused tid is left alone), file removed
//! ```
//!
//! `$RUNTIME` is /run/pinlearn for root, else $XDG_RUNTIME_DIR/pinlearn or
//! /tmp/pinlearn-UID; the directory is mode 0700 and must be owned by the
//! user. The start time (field 22 of /proc/TID/stat) tells a thread from a
//! later one that reuses its tid.

use super::tasks::process_alive;
use pinlearn_heartbeat::process_start_ticks as start_ticks;
use pinlearn_topology::CpuSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

const HEADER: &str = "pinlearn-journal 1";

/// The directory of journals for this user.
pub fn runtime_dir() -> PathBuf {
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    if uid == 0 {
        return PathBuf::from("/run/pinlearn");
    }
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir).join("pinlearn"),
        _ => std::env::temp_dir().join(format!("pinlearn-{uid}")),
    }
}

/// Where the journal of a supervision of `target` lives.
pub fn journal_path(target: u32) -> PathBuf {
    runtime_dir().join(format!("journal-{target}"))
}

/// An open journal, appended to before every first change of a mask.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    header: String,
    /// Threads whose original is in the journal and not forgotten.
    live: std::collections::HashMap<u32, (u64, CpuSet)>,
    /// Lines written since the file was last rewritten.
    lines: usize,
}

/// A journal is rewritten with only its live entries once it holds this
/// many lines and four times as many as live entries (thread churn).
const COMPACT_AT: usize = 1024;

/// What restoring a journal did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Restored {
    /// Threads whose original mask was put back.
    pub threads: usize,
    /// Threads that had ended (or whose tid now names another thread).
    pub gone: usize,
    /// Threads that could not be restored, with the reason.
    pub failed: Vec<(u32, String)>,
}

impl Journal {
    /// Starts the journal of a supervision of `target` by `manager` (this
    /// process). A journal left by a manager that died is restored first
    /// (the returned note says so); one whose manager still runs is an
    /// error (`AlreadyExists`): two managers must not fight over a process.
    pub fn create(target: u32, manager: u32) -> io::Result<(Journal, Option<String>)> {
        let dir = runtime_dir();
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
        let meta = std::fs::metadata(&dir)?;
        // SAFETY: geteuid cannot fail.
        let uid = unsafe { libc::geteuid() };
        if meta.uid() != uid || meta.mode() & 0o077 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} must be a directory of user {uid} that nobody else may use (mode 0700)",
                    dir.display()
                ),
            ));
        }
        let path = journal_path(target);
        let mut note = None;
        if path.exists() {
            match read(&path) {
                Ok((other, _)) if other != manager && process_alive(other) => {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!("process {target} is already managed by pinlearn (PID {other})"),
                    ));
                }
                _ => {
                    let restored = restore(&path)?;
                    note = Some(format!(
                        "a pinlearn that managed process {target} had died without restoring its masks: {} restored, {} gone",
                        restored.threads, restored.gone
                    ));
                }
            }
        }
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)?;
        let header = format!("{HEADER} manager={manager} target={target}\n");
        file.write_all(header.as_bytes())?;
        let journal = Journal {
            path,
            file,
            header,
            live: std::collections::HashMap::new(),
            lines: 0,
        };
        Ok((journal, note))
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes down `original`, the mask of thread `tid` before pinlearn
    /// changes it (one write, before the change).
    pub fn record(&mut self, tid: u32, original: &CpuSet) -> io::Result<()> {
        let ticks = start_ticks(tid).unwrap_or(0);
        self.file.write_all(format!("{tid} {ticks} {original}\n").as_bytes())?;
        self.live.insert(tid, (ticks, original.clone()));
        self.lines += 1;
        Ok(())
    }

    /// Writes down that thread `tid`'s mask is no longer pinlearn's to restore.
    pub fn forget(&mut self, tid: u32) -> io::Result<()> {
        if self.live.remove(&tid).is_none() {
            return Ok(());
        }
        self.file.write_all(format!("{tid} forget\n").as_bytes())?;
        self.lines += 1;
        if self.lines >= COMPACT_AT && self.lines >= 4 * self.live.len() {
            self.compact()?;
        }
        Ok(())
    }

    /// Rewrites the journal with its live entries only (a new file renamed
    /// over the old one, so a crash leaves one or the other).
    fn compact(&mut self) -> io::Result<()> {
        let mut text = self.header.clone();
        for (tid, (ticks, original)) in &self.live {
            text += &format!("{tid} {ticks} {original}\n");
        }
        replace_private_file(&self.path, text.as_bytes())?;
        self.file = OpenOptions::new().append(true).open(&self.path)?;
        self.lines = self.live.len();
        Ok(())
    }

    /// Every mask is back: the journal is no longer needed.
    pub fn finish(self) -> io::Result<()> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// Writes `bytes` to `path` (mode 0600) through a new file `PATH.new`
/// renamed over it, so a reader, or a crash, sees the old file or the new
/// one whole; a symbolic link planted at `PATH.new` is not followed.
pub fn replace_private_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut fresh = path.as_os_str().to_owned();
    fresh.push(".new");
    let fresh = PathBuf::from(fresh);
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&fresh)?;
    file.write_all(bytes)?;
    std::fs::rename(&fresh, path)
}

/// One line of a journal: a thread, its start time, its original mask.
pub type Entry = (u32, u64, CpuSet);

/// The manager's pid and the entries of a journal.
pub fn read(path: &Path) -> io::Result<(u32, Vec<Entry>)> {
    let bad = |why: &str| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {why}", path.display()));
    let text = std::fs::read_to_string(path)?;
    let mut lines = text.lines();
    let header = lines.next().ok_or_else(|| bad("empty"))?;
    let manager = header
        .strip_prefix(HEADER)
        .and_then(|rest| rest.split_whitespace().find_map(|field| field.strip_prefix("manager=")))
        .and_then(|pid| pid.parse().ok())
        .ok_or_else(|| bad("not a pinlearn journal"))?;
    // In order: the first entry of a thread is its original; "forget"
    // drops it (a later entry starts again).
    let mut entries: Vec<Entry> = Vec::new();
    for line in lines {
        if let Some(tid) = line.strip_suffix(" forget").and_then(|tid| tid.parse::<u32>().ok()) {
            entries.retain(|(known, _, _)| *known != tid);
            continue;
        }
        let mut fields = line.split_whitespace();
        let (Some(tid), Some(ticks), Some(cpus), None) = (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            // A line cut short by the manager's death: nothing was changed after it.
            continue;
        };
        let (Ok(tid), Ok(ticks), Ok(cpus)) = (tid.parse(), ticks.parse(), CpuSet::parse_list(cpus)) else {
            continue;
        };
        if !entries.iter().any(|(known, _, _)| *known == tid) {
            entries.push((tid, ticks, cpus));
        }
    }
    Ok((manager, entries))
}

/// Puts back every original mask of a journal whose manager is gone, then
/// removes it. The first entry of a thread is its original.
pub fn restore(path: &Path) -> io::Result<Restored> {
    let (_, entries) = read(path)?;
    let mut restored = Restored::default();
    let mut done = std::collections::HashSet::new();
    for (tid, ticks, original) in entries {
        if !done.insert(tid) {
            continue;
        }
        if ticks != 0 && start_ticks(tid) != Some(ticks) {
            restored.gone += 1;
            continue;
        }
        match super::set_affinity(tid, &original) {
            Ok(()) => restored.threads += 1,
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => restored.gone += 1,
            Err(e) => restored.failed.push((tid, e.to_string())),
        }
    }
    if restored.failed.is_empty() {
        std::fs::remove_file(path)?;
    }
    Ok(restored)
}

/// The watchdog: waits until `manager` ends or the journal is removed (the
/// manager restored everything itself), then restores whatever the journal
/// still holds. Ignores the terminal's and kill's polite signals, so that
/// only the manager's end ends it (the manager kills it when done).
pub fn watch(manager: u32, journal: &Path) -> io::Result<Option<Restored>> {
    for signal in [libc::SIGINT, libc::SIGHUP, libc::SIGTERM, libc::SIGQUIT, libc::SIGPIPE] {
        // SAFETY: setting a signal's disposition to SIG_IGN.
        unsafe { libc::signal(signal, libc::SIG_IGN) };
    }
    let started = start_ticks(manager);
    // SAFETY: pidfd_open(2) takes a pid and flags; a negative result is an error.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, manager as libc::c_long, 0 as libc::c_long) };
    let gone = || started.is_none() || start_ticks(manager) != started || !process_alive(manager);
    loop {
        if !journal.exists() {
            return Ok(None);
        }
        if gone() {
            break;
        }
        if pidfd >= 0 {
            let mut poll = libc::pollfd {
                fd: pidfd as libc::c_int,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd; the pidfd is readable once the process ends.
            unsafe { libc::poll(&mut poll, 1, 1000) };
        } else {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
    if !journal.exists() {
        return Ok(None);
    }
    restore(journal).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_restores_a_thread_and_skips_a_reused_tid() {
        let worker = super::super::test_thread::ParkedThread::start();
        let tid = worker.tid;
        let original = super::super::get_affinity(tid).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal");
        let ticks = start_ticks(tid).unwrap();
        std::fs::write(
            &path,
            format!("{HEADER} manager=1 target=1\n{tid} {ticks} {original}\n{tid} {ticks} 0\n999999 1 0\n12 3"),
        )
        .unwrap();
        let first = CpuSet::from_iter([original.first().unwrap()]);
        super::super::set_affinity(tid, &first).unwrap();
        let restored = restore(&path).unwrap();
        assert_eq!(super::super::get_affinity(tid).unwrap(), original);
        assert_eq!(restored.threads, 1, "{restored:?}");
        assert_eq!(restored.gone, 1, "the tid that is not alive (or reused) is left alone");
        assert!(!path.exists(), "a restored journal is removed");
        worker.finish();
    }

    #[test]
    fn forgotten_threads_are_not_restored_and_churn_compacts_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal");
        let file = OpenOptions::new().append(true).create(true).open(&path).unwrap();
        let header = format!("{HEADER} manager=1 target=1\n");
        std::fs::write(&path, &header).unwrap();
        let mut journal = Journal {
            path: path.clone(),
            file,
            header,
            live: std::collections::HashMap::new(),
            lines: 0,
        };
        let cpus = CpuSet::from_iter([0]);
        // 3000 short threads (tids that do not exist: start ticks 0), each
        // recorded and forgotten, and one that stays.
        const STAYS: u32 = 4_000_000_000; // above any pid_max: no such thread
        journal.record(STAYS, &cpus).unwrap();
        for tid in STAYS + 1..STAYS + 3001 {
            journal.record(tid, &cpus).unwrap();
            journal.forget(tid).unwrap();
        }
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        assert!(lines < COMPACT_AT + 2, "the journal was compacted: {lines} lines");
        let (_, entries) = read(&path).unwrap();
        assert_eq!(entries, vec![(STAYS, 0, cpus.clone())]);
        // A thread forgotten and then pinned again is restored to its newer original.
        journal.forget(STAYS).unwrap();
        journal.record(STAYS, &CpuSet::from_iter([1])).unwrap();
        let (_, entries) = read(&path).unwrap();
        assert_eq!(entries, vec![(STAYS, 0, CpuSet::from_iter([1]))]);
    }

    #[test]
    fn not_a_journal_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal");
        std::fs::write(&path, "hello\n").unwrap();
        assert!(read(&path).unwrap_err().to_string().contains("not a pinlearn journal"));
    }
}
