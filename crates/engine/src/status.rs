//! Where a supervised program's threads are right now, for `pinlearn status
//! PID`: the manager writes it down, any pinlearn of the same user reads it.
//!
//! ```text
//!   supervise, after each period whose placement changed (a thread came,
//!   went, moved, or changed bubble), at most every WRITE_EVERY_S:
//!     Engine::placement() ─► Status { manager, target, policy, time_s, bubbles, threads }
//!        ─► $RUNTIME/status-TARGET.json (0600; written to status-TARGET.json.new
//!           renamed over it, so a reader sees one whole status)
//!   end of the supervision (any way out): the file is removed (Drop); a
//!   killed manager's is removed by its watchdog or `pinlearn restore`
//!   (remove_stale)
//!
//!   pinlearn status PID ─► read(PID): a regular file of this user, at most
//!        16 MiB, valid JSON, its manager alive ─► Status::to_text(): the
//!        bubbles nested, each with the CPUs of its threads, then each thread
//! ```
//!
//! A status that cannot be written costs the run nothing but one note.
//! `$RUNTIME` is the journal's directory ([`crate::live::runtime_dir`]).

use crate::engine::Engine;
use crate::live::{process_alive, replace_private_file, runtime_dir};
use pinlearn_topology::CpuSet;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// Largest status file read.
const MAX_STATUS_BYTES: u64 = 16 << 20;

/// A supervision's placement at one moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// The pinlearn process that manages the target.
    pub manager: u32,
    /// The supervised process (the PID given to attach, or run's program).
    pub target: u32,
    pub policy: String,
    /// Seconds since the supervision started.
    pub time_s: f64,
    /// The bubbles known so far, parents before children.
    pub bubbles: Vec<StatusBubble>,
    /// Every live supervised thread.
    pub threads: Vec<StatusThread>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusBubble {
    pub name: String,
    /// The bubble it is nested in; `None`: the root.
    pub parent: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusThread {
    pub pid: u32,
    pub tid: u32,
    pub name: String,
    pub bubble: Option<String>,
    /// The CPUs pinlearn gave it; `None`: its own mask (Linux decides).
    pub cpus: Option<String>,
}

/// Where the status of a supervision of `target` lives.
pub fn status_path(target: u32) -> PathBuf {
    runtime_dir().join(format!("status-{target}.json"))
}

/// Why a status cannot be shown; one line.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error(
        "no pinlearn supervises process {0} (no status at {1}): start one with `pinlearn run` or `pinlearn attach {0}`"
    )]
    NotSupervised(u32, String),
    #[error("{0}: {1}")]
    Unreadable(String, String),
    #[error(
        "the pinlearn that supervised process {target} (PID {manager}) has ended without removing {path}; if masks were left, `pinlearn restore {target}` puts them back"
    )]
    Stale { target: u32, manager: u32, path: String },
}

/// Reads the status of the supervision of `target`.
pub fn read(target: u32) -> Result<Status, StatusError> {
    let path = status_path(target);
    let shown = path.display().to_string();
    let unreadable = |why: String| StatusError::Unreadable(shown.clone(), why);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(StatusError::NotSupervised(target, shown)),
        Err(e) => return Err(unreadable(e.to_string())),
    };
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    if !meta.file_type().is_file() || meta.uid() != uid {
        return Err(unreadable(format!("not a regular file of user {uid}: ignored")));
    }
    if meta.len() > MAX_STATUS_BYTES {
        return Err(unreadable(format!("larger than {MAX_STATUS_BYTES} bytes: ignored")));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| unreadable(e.to_string()))?;
    let status: Status = serde_json::from_str(&text).map_err(|e| unreadable(format!("not a pinlearn status: {e}")))?;
    if status.target != target {
        return Err(unreadable(format!("it describes process {}", status.target)));
    }
    if !process_alive(status.manager) {
        return Err(StatusError::Stale {
            target,
            manager: status.manager,
            path: shown,
        });
    }
    Ok(status)
}

/// Removes the status of the supervision of `target` if its manager has
/// ended without removing it (killed); returns whether it did.
pub fn remove_stale(target: u32) -> io::Result<bool> {
    match read(target) {
        Err(StatusError::Stale { .. }) => std::fs::remove_file(status_path(target)).map(|()| true),
        _ => Ok(false),
    }
}

impl Status {
    /// The bubbles nested, each with the CPUs its threads hold, and under
    /// each its threads with their CPUs; threads in no bubble last.
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "pinlearn (PID {}) supervises process {} with policy {}, {} threads, {:.1} s into the run\n",
            self.manager,
            self.target,
            self.policy,
            self.threads.len(),
            self.time_s
        );
        let known: Vec<&str> = self.bubbles.iter().map(|b| b.name.as_str()).collect();
        // Threads whose bubble is not in the list (it should not happen) are
        // shown with those in no bubble, their bubble named.
        let roots: Vec<&StatusBubble> = self
            .bubbles
            .iter()
            .filter(|b| b.parent.as_deref().is_none_or(|p| !known.contains(&p)))
            .collect();
        for bubble in roots {
            self.bubble_text(bubble, 0, &mut text);
        }
        let loose: Vec<&StatusThread> = self
            .threads
            .iter()
            .filter(|t| t.bubble.as_deref().is_none_or(|b| !known.contains(&b)))
            .collect();
        if !loose.is_empty() {
            if !self.bubbles.is_empty() {
                text.push_str("in no bubble\n");
            }
            let indent = if self.bubbles.is_empty() { 0 } else { 1 };
            for thread in loose {
                thread_text(thread, indent, &mut text);
            }
        }
        text
    }

    fn bubble_text(&self, bubble: &StatusBubble, depth: usize, text: &mut String) {
        let cpus = self.cpus_within(&bubble.name);
        let _ = writeln!(
            text,
            "{:indent$}bubble {}  CPUs {}",
            "",
            crate::printable(&bubble.name),
            if cpus.is_empty() {
                "-".to_string()
            } else {
                cpus.to_string()
            },
            indent = 2 * depth
        );
        for child in self
            .bubbles
            .iter()
            .filter(|b| b.parent.as_deref() == Some(bubble.name.as_str()))
        {
            self.bubble_text(child, depth + 1, text);
        }
        for thread in self
            .threads
            .iter()
            .filter(|t| t.bubble.as_deref() == Some(bubble.name.as_str()))
        {
            thread_text(thread, depth + 1, text);
        }
    }

    /// The CPUs the threads of `bubble` and of the bubbles nested in it hold.
    fn cpus_within(&self, bubble: &str) -> CpuSet {
        let mut names = vec![bubble];
        let mut at = 0;
        while at < names.len() {
            let parent = names[at];
            names.extend(
                self.bubbles
                    .iter()
                    .filter(|b| b.parent.as_deref() == Some(parent))
                    .map(|b| b.name.as_str()),
            );
            at += 1;
            // A cycle cannot come from the manager; bounded anyway.
            if names.len() > self.bubbles.len() + 1 {
                break;
            }
        }
        self.threads
            .iter()
            .filter(|t| t.bubble.as_deref().is_some_and(|b| names.contains(&b)))
            .filter_map(|t| t.cpus.as_deref().and_then(|cpus| CpuSet::parse_list(cpus).ok()))
            .fold(CpuSet::new(), |all, cpus| all.union(&cpus))
    }
}

fn thread_text(thread: &StatusThread, depth: usize, text: &mut String) {
    let _ = writeln!(
        text,
        "{:indent$}{} (tid {}, pid {})  {}",
        "",
        if thread.name.is_empty() {
            "?".into()
        } else {
            crate::printable(&thread.name)
        },
        thread.tid,
        thread.pid,
        thread
            .cpus
            .as_deref()
            .map_or_else(|| "its own mask".to_string(), |cpus| format!("CPUs {cpus}")),
        indent = 2 * depth
    );
}

/// The status file of one supervision, kept up to date by the manager and
/// removed when it ends.
#[derive(Debug)]
pub struct StatusFile {
    path: PathBuf,
    target: u32,
    manager: u32,
    /// The engine's placement version last written, and when (seconds
    /// into the run).
    written: Option<u64>,
    written_at: f64,
    /// Why writing failed (then it is not tried again).
    failed: Option<String>,
}

/// Shortest time between two writes of a status file, in seconds (the
/// first is written at once).
pub const WRITE_EVERY_S: f64 = 0.25;

impl StatusFile {
    /// The status of a supervision of `target` by this process; nothing is
    /// written before the first [`Self::update`]. The runtime directory is
    /// the journal's, created and checked by [`crate::live::Journal::create`].
    pub fn new(target: u32) -> Self {
        StatusFile {
            path: status_path(target),
            target,
            manager: std::process::id(),
            written: None,
            written_at: f64::NEG_INFINITY,
            failed: None,
        }
    }

    /// Writes the engine's placement if it changed since the last write.
    pub fn update(&mut self, engine: &Engine, time_s: f64) {
        let version = engine.placement_version();
        if self.failed.is_some() || self.written == Some(version) {
            return;
        }
        // Threads that come and go change the placement every period: the
        // file (every thread, rewritten and renamed) is kept at most
        // WRITE_EVERY_S old instead of rewritten each time.
        if self.written.is_some() && time_s - self.written_at < WRITE_EVERY_S {
            return;
        }
        let (bubbles, threads) = engine.placement();
        let status = Status {
            manager: self.manager,
            target: self.target,
            policy: engine.policy_name(),
            time_s,
            bubbles,
            threads,
        };
        match self.write(&status) {
            Ok(()) => {
                self.written = Some(version);
                self.written_at = time_s;
            }
            Err(e) => {
                self.failed = Some(format!(
                    "cannot write the status {} ({e}): `pinlearn status {}` will not show this run",
                    self.path.display(),
                    self.target
                ));
            }
        }
    }

    fn write(&self, status: &Status) -> io::Result<()> {
        let json = serde_json::to_vec(status).map_err(io::Error::other)?;
        replace_private_file(&self.path, &json)
    }

    /// Why the status could not be written, said once at the end.
    pub fn take_note(&mut self) -> Option<String> {
        self.failed.take()
    }
}

impl Drop for StatusFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let mut fresh = self.path.as_os_str().to_owned();
        fresh.push(".new");
        let _ = std::fs::remove_file(fresh);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(tid: u32, name: &str, bubble: Option<&str>, cpus: Option<&str>) -> StatusThread {
        StatusThread {
            pid: 100,
            tid,
            name: name.into(),
            bubble: bubble.map(Into::into),
            cpus: cpus.map(Into::into),
        }
    }

    fn bubble(name: &str, parent: Option<&str>) -> StatusBubble {
        StatusBubble {
            name: name.into(),
            parent: parent.map(Into::into),
        }
    }

    #[test]
    fn text_nests_bubbles_and_gives_each_the_cpus_of_its_threads() {
        let status = Status {
            manager: 7,
            target: 100,
            policy: "bubbles".into(),
            time_s: 2.0,
            bubbles: vec![bubble("job", None), bubble("a", Some("job")), bubble("b", Some("job"))],
            threads: vec![
                thread(101, "w-0", Some("a"), Some("0")),
                thread(102, "w-1", Some("a"), Some("1")),
                thread(103, "w-2", Some("b"), Some("2-3")),
                thread(100, "main", None, None),
            ],
        };
        let text = status.to_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1..],
            [
                "bubble job  CPUs 0-3",
                "  bubble a  CPUs 0-1",
                "    w-0 (tid 101, pid 100)  CPUs 0",
                "    w-1 (tid 102, pid 100)  CPUs 1",
                "  bubble b  CPUs 2-3",
                "    w-2 (tid 103, pid 100)  CPUs 2-3",
                "in no bubble",
                "  main (tid 100, pid 100)  its own mask",
            ],
            "{text}"
        );
        assert!(
            lines[0].contains("process 100 with policy bubbles, 4 threads"),
            "{text}"
        );
    }

    #[test]
    fn a_missing_status_says_how_to_start_one() {
        let err = read(u32::MAX - 1).unwrap_err().to_string();
        assert!(err.contains("no pinlearn supervises process"), "{err}");
        assert!(!err.contains('\n'));
    }
}
