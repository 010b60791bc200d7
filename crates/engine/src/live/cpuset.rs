//! The CPUs a process's cgroup lets it use, watched during a run: Slurm, a
//! container runtime or an administrator may shrink or grow a job's cpuset
//! while it runs, and the kernel then changes every thread's mask.
//!
//! ```text
//!   CpusetWatch::of(pid):  /proc/PID/cgroup ──► the cpuset cgroup's path
//!                          /proc/self/mountinfo ──► where that hierarchy is mounted
//!                          ──► v1: MOUNT/PATH/cpuset.effective_cpus   v2: MOUNT/PATH/cpuset.cpus.effective
//!   read() every period:   one pread of that file ──► CpuSet
//! ```
//!
//! No cpuset controller (or no file): nothing is watched, and the CPUs are
//! the ones the process could use when pinlearn started.

use pinlearn_topology::CpuSet;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// The effective CPUs of one process's cpuset cgroup.
#[derive(Debug)]
pub struct CpusetWatch {
    file: File,
    path: PathBuf,
}

impl CpusetWatch {
    /// The cpuset file of process `pid`, if it has one.
    pub fn of(pid: u32) -> Option<Self> {
        let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let candidates = cpuset_files(&cgroups, &mounts);
        candidates
            .into_iter()
            .find_map(|path| File::open(&path).ok().map(|file| CpusetWatch { file, path }))
    }

    /// The file read.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The CPUs the cgroup allows now (`None` if unreadable or empty).
    pub fn read(&self) -> Option<CpuSet> {
        let mut buf = [0u8; 4096];
        let n = self.file.read_at(&mut buf, 0).ok()?;
        let text = std::str::from_utf8(&buf[..n]).ok()?.trim();
        CpuSet::parse_list(text).ok().filter(|cpus| !cpus.is_empty())
    }
}

/// The cpuset files that may hold a process's effective CPUs, cgroup v1
/// first (a v2 hierarchy without the cpuset controller has no such file).
fn cpuset_files(cgroups: &str, mountinfo: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for (controllers, path) in cgroup_entries(cgroups) {
        if names_controller(controllers, "cpuset") {
            let dirs = cgroup_dirs(path, Some("cpuset"), mountinfo);
            files.extend(dirs.into_iter().map(|dir| dir.join("cpuset.effective_cpus")));
        } else if controllers.is_empty() {
            let dirs = cgroup_dirs(path, None, mountinfo);
            files.extend(dirs.into_iter().map(|dir| dir.join("cpuset.cpus.effective")));
        }
    }
    files.sort_by_key(|path| !path.ends_with("cpuset.effective_cpus"));
    files
}

/// The directories where cgroup `path` (as /proc/PID/cgroup names it) is
/// found: in every mount of the v1 hierarchy holding `controller`, or of
/// the v2 hierarchy when `controller` is `None`.
pub(super) fn cgroup_dirs(path: &str, controller: Option<&str>, mountinfo: &str) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for mount in mountinfo.lines() {
        // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... - FSTYPE SOURCE SUPER_OPTIONS
        let Some((left, right)) = mount.split_once(" - ") else {
            continue;
        };
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        if left.len() < 5 || right.len() < 3 {
            continue;
        }
        let (root, point, fstype, options) = (left[3], left[4], right[0], right[2]);
        let matches = match controller {
            Some(controller) => fstype == "cgroup" && options.split(',').any(|o| o == controller),
            None => fstype == "cgroup2",
        };
        if !matches {
            continue;
        }
        // The path is relative to the cgroup namespace's root; a mount of a
        // sub-tree shows that sub-tree as its root.
        let relative = path.strip_prefix(root).unwrap_or(path).trim_start_matches('/');
        dirs.push(PathBuf::from(point).join(relative));
    }
    dirs
}

/// The `(controllers, path)` of every line of a /proc/PID/cgroup text
/// (`ID:CONTROLLERS:PATH`; the controllers are empty for the v2
/// hierarchy); malformed lines are skipped.
pub(super) fn cgroup_entries(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines().filter_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        Some((controllers, path))
    })
}

/// Whether a v1 controllers field (`cpu,cpuacct`) names `controller`.
pub(super) fn names_controller(controllers: &str, controller: &str) -> bool {
    controllers.split(',').any(|c| c == controller)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_v1_and_v2_files_of_a_process() {
        let cgroups = "9:name=systemd:/\n3:cpuset:/job/42\n0::/user.slice/job\n";
        let mounts = "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n\
                      41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n\
                      35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n";
        let files = cpuset_files(cgroups, mounts);
        assert_eq!(
            files,
            vec![
                PathBuf::from("/sys/fs/cgroup/cpuset/job/42/cpuset.effective_cpus"),
                PathBuf::from("/sys/fs/cgroup/unified/user.slice/job/cpuset.cpus.effective"),
            ]
        );
        // A container that sees only its own sub-tree, mounted as its root.
        let mounts = "50 40 0:27 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let files = cpuset_files("0::/kubepods/pod1/app\n", mounts);
        assert_eq!(files, vec![PathBuf::from("/sys/fs/cgroup/app/cpuset.cpus.effective")]);
    }

    #[test]
    fn this_process_has_a_readable_cpuset_where_the_controller_is_mounted() {
        if let Some(watch) = CpusetWatch::of(std::process::id()) {
            let cpus = watch.read().expect("a cpuset file lists CPUs");
            assert!(!cpus.is_empty(), "{}", watch.path().display());
        }
    }
}
