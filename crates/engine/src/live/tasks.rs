//! The threads of a process tree, found through /proc: the one /proc thread
//! watcher of the project (the live target and the bench's best-static
//! pinner both use it).
//!
//! ```text
//!   scan():  pending = [root]
//!     pop pid ─► fstat of /proc/PID/task (kept open; its link count is 2 +
//!                the thread count): as many threads as the last scan
//!                listed, none ended since (rescan()), and fewer than
//!                CHILDREN_EVERY scans ago? ─► the same tids
//!                else /proc/PID/task (directory kept open, rewound) ─► tids
//!                 └─ children on: /proc/PID/task/TID/children (file kept open; read for
//!                    a new thread, then every CHILDREN_EVERY scans) ─► child pids ─► pending
//!     ─► Scan { threads: [(pid, tid)], ended: pids seen before and gone now,
//!               parents: child pid -> the pid whose thread started it }
//! ```
//!
//! A process or thread can end at any moment: whatever cannot be opened or
//! read is simply not there, never an error.
//!
//! Reading every thread's children file at every scan was most of the
//! manager's cost with many threads (1.1% of a core with 65 threads at
//! 20 scans/s, with sched_getaffinity's decoding); a process started by a
//! thread seen before is found within [`CHILDREN_EVERY`] scans. Listing
//! /proc/PID/task was most of the rest: it is listed again when the
//! process's thread count changed, when the
//! caller saw a thread end ([`TaskWatcher::rescan`]: one may have started
//! in its place), and every [`CHILDREN_EVERY`] scans whatever happened.

use nix::dir::Dir;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::FileExt;

/// Scans between two reads of a known thread's children file, and at most
/// between two listings of a process's threads.
pub const CHILDREN_EVERY: u64 = 4;

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
    /// Open /proc/PID/task directories, by pid, with the process's
    /// /proc/PID/stat and the threads the last listing found.
    task_dirs: HashMap<u32, Listed>,
    /// List every process's threads at the next scan.
    relist: bool,
    /// Open /proc/PID/task/TID/children files, by tid, and the processes
    /// each thread had started at its last read.
    children_files: HashMap<u32, (File, Vec<u32>)>,
    scans: u64,
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
            relist: false,
            children_files: HashMap::new(),
            scans: 0,
            skip: None,
        }
    }

    /// Leaves process `pid` and every process it started out of the tree
    /// (unless it is the root): pinlearn never watches itself.
    pub fn skipping(mut self, pid: u32) -> Self {
        self.skip = (pid != self.root).then_some(pid);
        self
    }

    /// Makes the next scan list every process's threads (a thread ended:
    /// another may have started since, leaving the count unchanged).
    pub fn rescan(&mut self) {
        self.relist = true;
    }

    /// Every live thread of the tree now.
    pub fn scan(&mut self) -> Scan {
        let reread = self.scans.is_multiple_of(CHILDREN_EVERY);
        self.scans += 1;
        let relist = std::mem::replace(&mut self.relist, false) || reread;
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
            let listed = match self.task_dirs.entry(pid) {
                Entry::Occupied(listed) => listed.into_mut(),
                Entry::Vacant(slot) => match Listed::open(pid) {
                    Some(listed) => slot.insert(listed),
                    None => continue,
                },
            };
            let tids = listed.tids(relist);
            if !tids.is_empty() {
                live_pids.insert(pid);
            }
            for &tid in tids {
                if self.children {
                    let first_child = pending.len();
                    child_processes(&mut self.children_files, pid, tid, reread, &mut pending);
                    for &child in &pending[first_child..] {
                        parents.entry(child).or_insert(pid);
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
}

/// Appends to `out` the processes thread `tid` of `pid` started, read from
/// its children file (kept open in `files`) when the thread is new or
/// `reread`, else as last read.
fn child_processes(files: &mut HashMap<u32, (File, Vec<u32>)>, pid: u32, tid: u32, reread: bool, out: &mut Vec<u32>) {
    let (file, children) = match files.entry(tid) {
        Entry::Occupied(entry) => {
            let (file, children) = entry.into_mut();
            if !reread {
                out.extend_from_slice(children);
                return;
            }
            (file, children)
        }
        Entry::Vacant(slot) => match File::open(format!("/proc/{pid}/task/{tid}/children")) {
            Ok(file) => {
                let (file, children) = slot.insert((file, Vec::new()));
                (file, children)
            }
            Err(_) => return,
        },
    };
    let mut buf = [0u8; 4096];
    let n = file.read_at(&mut buf, 0).unwrap_or(0);
    children.clear();
    if let Ok(text) = std::str::from_utf8(&buf[..n]) {
        children.extend(text.split_ascii_whitespace().filter_map(|p| p.parse::<u32>().ok()));
    }
    out.extend_from_slice(children);
}

/// One process's thread listing.
struct Listed {
    dir: Dir,
    tids: Vec<u32>,
    /// The thread count when `tids` was listed.
    count: Option<u64>,
}

impl Listed {
    fn open(pid: u32) -> Option<Listed> {
        let dir = Dir::open(
            format!("/proc/{pid}/task").as_str(),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        Some(Listed {
            dir,
            tids: Vec::new(),
            count: None,
        })
    }

    /// The process's threads: those listed last time while its thread
    /// count is the same (and `relist` is false), else listed afresh.
    fn tids(&mut self, relist: bool) -> &[u32] {
        let count = task_dir_thread_count(&self.dir);
        if relist || count.is_none() || count != self.count {
            self.tids = self
                .dir
                .iter()
                .flatten()
                .filter_map(|entry| entry.file_name().to_str().ok()?.parse().ok())
                .collect();
            self.count = count.filter(|&c| c == self.tids.len() as u64);
        }
        &self.tids
    }
}

/// The thread count of a process from its open /proc/PID/task directory:
/// the kernel gives that directory 2 + that many links. A `fstat`, where
/// reading /proc/PID/stat sums every thread's times under the process's
/// locks (and waited seconds for a crowded process's in a measured case,
/// docs/reliability.md).
fn task_dir_thread_count(dir: &Dir) -> Option<u64> {
    let stat = nix::sys::stat::fstat(dir).ok()?;
    (stat.st_nlink as u64).checked_sub(2)
}

/// Whether process `pid` runs (exists and is not a zombie).
pub fn process_alive(pid: u32) -> bool {
    match procfs::process::Process::new(pid as i32).and_then(|p| p.stat()) {
        Ok(stat) => !matches!(stat.state, 'Z' | 'X'),
        Err(_) => false,
    }
}

/// The name thread `tid` of `pid` gave itself (`/proc/PID/task/TID/comm`).
/// A thread may give itself any bytes but NUL: bytes that are not UTF-8
/// become U+FFFD, so the name still shows (and rules still match the rest).
pub fn thread_name(pid: u32, tid: u32) -> Option<String> {
    let bytes = std::fs::read(format!("/proc/{pid}/task/{tid}/comm")).ok()?;
    let name = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    Some(String::from_utf8_lossy(name).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent_of_me() -> u32 {
        std::os::unix::process::parent_id()
    }

    #[test]
    fn the_task_directory_counts_the_threads_of_its_process() {
        let me = std::process::id();
        let dir = Dir::open(
            format!("/proc/{me}/task").as_str(),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        let listed = || std::fs::read_dir(format!("/proc/{me}/task")).unwrap().count() as u64;
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let wait = std::sync::Arc::new(std::sync::Mutex::new(wait));
        // The harness runs other tests' threads beside this one: compare
        // with listings taken just before and after.
        let before = listed();
        let helpers: Vec<_> = (0..3)
            .map(|_| {
                let wait = wait.clone();
                std::thread::spawn(move || {
                    let _ = wait.lock().unwrap().recv();
                })
            })
            .collect();
        let (low, count, high) = (listed(), task_dir_thread_count(&dir), listed());
        let count = count.expect("a count");
        assert!(
            count >= low.min(high) && count <= low.max(high),
            "{low} <= {count} <= {high}"
        );
        assert!(
            count >= 4,
            "this thread and three helpers at least: {count} (before them {before})"
        );
        drop(go);
        for helper in helpers {
            helper.join().unwrap();
        }
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
        // A new thread shows at the next scan when the thread count changed
        // (the harness's threads come and go too), and at the latest within
        // CHILDREN_EVERY scans, like a process started by a thread seen before.
        let scans: Vec<Scan> = (0..CHILDREN_EVERY).map(|_| watcher.scan()).collect();
        let scan = scans.last().unwrap();
        assert!(scan.threads.contains(&(me, tid)), "{scans:?}");
        let found = scans
            .iter()
            .position(|scan| scan.threads.iter().any(|&(pid, _)| pid == child.id()));
        assert_eq!(found, Some(CHILDREN_EVERY as usize - 1), "{scans:?}");
        assert_eq!(thread_name(me, tid).as_deref(), Some("tasks-test"));

        child.kill().unwrap();
        child.wait().unwrap();
        done_tx.send(()).unwrap();
        worker.join().unwrap();
        // The live target calls rescan() when a thread's probe says it ended.
        watcher.rescan();
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

    #[test]
    fn a_name_that_is_not_utf8_is_read_with_replacement_characters_not_lost() {
        let me = std::process::id();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            // Any bytes but NUL, as a C program may give them (prctl copies
            // at most 15 of them).
            let name = c"w\xff\nx ";
            // SAFETY: PR_SET_NAME reads a NUL-terminated string we own.
            let set = unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
            assert_eq!(set, 0);
            tid_tx.send(nix::unistd::gettid().as_raw() as u32).unwrap();
            done_rx.recv().ok();
        });
        let tid = tid_rx.recv().unwrap();
        assert_eq!(thread_name(me, tid).as_deref(), Some("w\u{fffd}\nx "));
        done_tx.send(()).unwrap();
        worker.join().unwrap();
    }
}
