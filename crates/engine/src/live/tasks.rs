//! The threads of a process tree, found through /proc: the one /proc thread
//! watcher of the project (the live target and the bench's best-static
//! pinner both use it).
//!
//! ```text
//!   scan():  pending = [root]
//!     pop pid ─► /proc/PID/task (directory kept open, rewound each scan) ─► tids
//!                 └─ children on: /proc/PID/task/TID/children (file kept open) ─► child pids ─► pending
//!     ─► Scan { threads: [(pid, tid)], ended: pids seen before and gone now,
//!               parents: child pid -> the pid whose thread started it }
//! ```
//!
//! A process or thread can end at any moment: whatever cannot be opened or
//! read is simply not there, never an error.

use nix::dir::Dir;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::FileExt;

/// What one scan found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Scan {
    /// Every live (pid, tid) of the tree, process by process.
    pub threads: Vec<(u32, u32)>,
    /// Processes of the tree found by an earlier scan and gone now.
    pub ended: Vec<u32>,
    /// The process that started each process of the tree (not the root).
    pub parents: HashMap<u32, u32>,
}

/// Watches the threads of process `root` (and its descendants).
pub struct TaskWatcher {
    root: u32,
    children: bool,
    /// Open /proc/PID/task directories, by pid.
    task_dirs: HashMap<u32, Dir>,
    /// Open /proc/PID/task/TID/children files, by tid.
    children_files: HashMap<u32, File>,
    /// A process left out with all it started (pinlearn itself).
    skip: Option<u32>,
}

impl TaskWatcher {
    /// Watches `root`, and every process it starts when `children`.
    pub fn new(root: u32, children: bool) -> Self {
        TaskWatcher {
            root,
            children,
            task_dirs: HashMap::new(),
            children_files: HashMap::new(),
            skip: None,
        }
    }

    /// Leaves process `pid` and every process it started out of the tree
    /// (unless it is the root): pinlearn never watches itself.
    pub fn skipping(mut self, pid: u32) -> Self {
        self.skip = (pid != self.root).then_some(pid);
        self
    }

    /// Every live thread of the tree now.
    pub fn scan(&mut self) -> Scan {
        let mut threads = Vec::new();
        let mut pending = vec![self.root];
        let mut seen_pids = HashSet::new();
        let mut live_pids = HashSet::new();
        let mut live_tids = HashSet::new();
        let mut parents = HashMap::new();
        while let Some(pid) = pending.pop() {
            if !seen_pids.insert(pid) || self.skip == Some(pid) {
                continue;
            }
            let dir = match self.task_dirs.entry(pid) {
                Entry::Occupied(dir) => dir.into_mut(),
                Entry::Vacant(slot) => match Dir::open(
                    format!("/proc/{pid}/task").as_str(),
                    OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
                    Mode::empty(),
                ) {
                    Ok(dir) => slot.insert(dir),
                    Err(_) => continue,
                },
            };
            let tids: Vec<u32> = dir
                .iter()
                .flatten()
                .filter_map(|entry| entry.file_name().to_str().ok()?.parse().ok())
                .collect();
            if !tids.is_empty() {
                live_pids.insert(pid);
            }
            for tid in tids {
                if self.children {
                    for child in self.child_processes(pid, tid) {
                        parents.entry(child).or_insert(pid);
                        pending.push(child);
                    }
                    live_tids.insert(tid);
                }
                threads.push((pid, tid));
            }
        }
        self.children_files.retain(|tid, _| live_tids.contains(tid));
        let ended: Vec<u32> = self
            .task_dirs
            .keys()
            .copied()
            .filter(|pid| !live_pids.contains(pid))
            .collect();
        for pid in &ended {
            self.task_dirs.remove(pid);
        }
        Scan {
            threads,
            ended,
            parents,
        }
    }

    /// The processes thread `tid` of `pid` started, read from its children file.
    fn child_processes(&mut self, pid: u32, tid: u32) -> Vec<u32> {
        let file = match self.children_files.entry(tid) {
            Entry::Occupied(file) => file.into_mut(),
            Entry::Vacant(slot) => match File::open(format!("/proc/{pid}/task/{tid}/children")) {
                Ok(file) => slot.insert(file),
                Err(_) => return Vec::new(),
            },
        };
        let mut buf = [0u8; 4096];
        let n = file.read_at(&mut buf, 0).unwrap_or(0);
        std::str::from_utf8(&buf[..n])
            .map(|s| s.split_ascii_whitespace().filter_map(|p| p.parse().ok()).collect())
            .unwrap_or_default()
    }
}

/// Whether process `pid` runs (exists and is not a zombie).
pub fn process_alive(pid: u32) -> bool {
    match procfs::process::Process::new(pid as i32).and_then(|p| p.stat()) {
        Ok(stat) => !matches!(stat.state, 'Z' | 'X'),
        Err(_) => false,
    }
}

/// The name thread `tid` of `pid` gave itself (`/proc/PID/task/TID/comm`).
pub fn thread_name(pid: u32, tid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent_of_me() -> u32 {
        std::os::unix::process::parent_id()
    }

    #[test]
    fn finds_a_new_thread_and_a_child_process_and_their_end() {
        let me = std::process::id();
        let mut watcher = TaskWatcher::new(me, true);
        let before = watcher.scan();
        assert!(before.threads.contains(&(me, me)), "{before:?}");

        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::Builder::new()
            .name("tasks-test".into())
            .spawn(move || {
                tid_tx.send(nix::unistd::gettid().as_raw() as u32).unwrap();
                done_rx.recv().ok();
            })
            .unwrap();
        let tid = tid_rx.recv().unwrap();
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let scan = watcher.scan();
        assert!(scan.threads.contains(&(me, tid)), "{scan:?}");
        assert!(scan.threads.iter().any(|&(pid, _)| pid == child.id()), "{scan:?}");
        assert_eq!(thread_name(me, tid).as_deref(), Some("tasks-test"));

        child.kill().unwrap();
        child.wait().unwrap();
        done_tx.send(()).unwrap();
        worker.join().unwrap();
        let after = watcher.scan();
        assert!(!after.threads.iter().any(|&(_, t)| t == tid), "{after:?}");
        assert_eq!(after.ended, vec![child.id()]);

        // The skipped process and what it started are left out.
        let mut sleeper = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let mut parent = TaskWatcher::new(me, true).skipping(me);
        assert!(parent.scan().threads.len() > 1, "the root is never skipped");
        let scan = TaskWatcher::new(parent_of_me(), true).skipping(me).scan();
        assert!(
            !scan.threads.iter().any(|&(pid, _)| pid == me || pid == sleeper.id()),
            "{scan:?}"
        );
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();

        // Without children, the child process is not looked at.
        let mut own = TaskWatcher::new(me, false);
        let mut other = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        assert!(!own.scan().threads.iter().any(|&(pid, _)| pid == other.id()));
        other.kill().unwrap();
        other.wait().unwrap();
    }
}
