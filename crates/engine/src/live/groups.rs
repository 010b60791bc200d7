//! Wake-ups against other programs: whether the programs beside the target
//! run in scheduling groups apart from it, and how long each of its threads
//! runs between two sleeps of its own (the policy's
//! [`PeriodInput::wake_slice_s`](pinlearn_policy::PeriodInput) and
//! [`ThreadSample::grain_s`](pinlearn_policy::ThreadSample)).
//!
//! ```text
//!   every SCAN_EVERY (5 s; 1 s after the first), GroupWatch::refresh:
//!     /proc/*/stat  ── CPU ticks since the last scan, per process that is
//!          │            neither the target's nor pinlearn's (kernel threads skipped)
//!          ▼ the busy ones
//!     group_key: the effective CPU cgroup (v1 `cpu` line, or v2's path cut
//!          │      where the `cpu` controller stops), and the autogroup
//!          │      (/proc/PID/autogroup, empty for the root group) where
//!          ▼      that cgroup is the root and autogroup is on
//!     apart = at most 10% of those ticks ran in the target's group
//!          │      (too few ticks: the last answer stands)
//!          ▼
//!     wake_slice() = Linux's slice when apart, else None
//!
//!   every GRAIN_EVERY periods per thread, Grain::update:
//!     /proc/PID/task/TID/status voluntary_ctxt_switches (delta)
//!     grain = run time since the last read / that delta (None: it never slept)
//! ```
//!
//! Both are read only now and then: a process scan costs about 10 µs a
//! process, a status read about as much, and what they tell (the other
//! programs' groups, a program's rhythm) changes slowly.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use super::cpuset::{cgroup_dirs, cgroup_entries, names_controller};

/// Time between two scans of the other processes, after the second.
const SCAN_EVERY: Duration = Duration::from_secs(5);

/// Time between the first scan, which only counts every process's CPU
/// time so far, and the second, the first to tell.
const FIRST_GAP: Duration = Duration::from_secs(1);

/// Periods between two reads of a thread's voluntary switches.
pub(super) const GRAIN_EVERY: u32 = 20;

/// Of the other programs' CPU time, at most this share may run in the
/// target's own group for them to count as apart.
const SAME_GROUP_AT_MOST: f64 = 0.1;

/// Fewer clock ticks than this over a scan tell nothing (no load at all).
const MIN_TICKS: u64 = 10;

/// EEVDF's base slice before scaling (`sysctl_sched_base_slice`, 0.75 ms).
const BASE_SLICE_S: f64 = 0.75e-3;

/// Which scheduling groups the other busy programs run in.
#[derive(Debug)]
pub(super) struct GroupWatch {
    autogroup: bool,
    /// /proc/self/mountinfo, read once: where the v2 hierarchy is mounted.
    mountinfo: String,
    slice_s: f64,
    /// When the last scan that counted the processes was, and whether it
    /// was the first.
    last_scan: Option<(Instant, bool)>,
    /// CPU ticks (utime + stime) of every other process at the last scan,
    /// by (pid, start time).
    ticks: HashMap<(i32, u64), u64>,
    /// Group keys of processes seen busy, by (pid, start time).
    keys: HashMap<(i32, u64), Option<String>>,
    apart: Option<bool>,
    /// The first finding of other programs apart was reported.
    reported: bool,
}

impl GroupWatch {
    /// A watch of this machine's programs.
    pub(super) fn new() -> Self {
        // SAFETY: sysconf has no preconditions.
        let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
        GroupWatch {
            autogroup: std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
                .is_ok_and(|s| s.trim() == "1"),
            mountinfo: std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default(),
            slice_s: linux_slice_s(cpus),
            last_scan: None,
            ticks: HashMap::new(),
            keys: HashMap::new(),
            apart: None,
            reported: false,
        }
    }

    /// Linux's slice when the other programs run apart from the target's
    /// group, as last found.
    pub(super) fn wake_slice(&self) -> Option<f64> {
        self.apart.filter(|&apart| apart).map(|_| self.slice_s)
    }

    /// True once, the first time the other programs are found apart.
    pub(super) fn newly_apart(&mut self) -> bool {
        let newly = self.apart == Some(true) && !self.reported;
        self.reported |= newly;
        newly
    }

    /// Scans the other processes if [`SCAN_EVERY`] has passed since the
    /// last scan; `own` are the target's processes (pinlearn's own is
    /// skipped too).
    pub(super) fn refresh(&mut self, own: &HashSet<u32>, now: Instant) {
        let first = match self.last_scan {
            None => true,
            Some((at, first)) if now.duration_since(at) < if first { FIRST_GAP } else { SCAN_EVERY } => return,
            Some(_) => false,
        };
        // Until a scan has counted every process's CPU time, the next one
        // is a first one again (it only counts).
        let Some(&root) = own.iter().min() else {
            return;
        };
        let Some(target_key) = group_key(root as i32, self.autogroup, &self.mountinfo) else {
            return;
        };
        let Ok(all) = procfs::process::all_processes() else {
            return;
        };
        self.last_scan = Some((now, first));
        let me = std::process::id();
        let mut ticks = HashMap::with_capacity(self.ticks.len());
        let (mut same, mut other) = (0u64, 0u64);
        for process in all.flatten() {
            let pid = process.pid;
            if pid <= 0 || own.contains(&(pid as u32)) || pid as u32 == me {
                continue;
            }
            let Ok(stat) = process.stat() else {
                continue;
            };
            // Kernel threads (PF_KTHREAD) belong to no program.
            if stat.flags & 0x0020_0000 != 0 {
                continue;
            }
            let id = (pid, stat.starttime);
            let now_ticks = stat.utime + stat.stime;
            ticks.insert(id, now_ticks);
            // A process new since the last scan ran all its time since.
            let busy = now_ticks.saturating_sub(self.ticks.get(&id).copied().unwrap_or(0));
            if busy == 0 || first {
                continue;
            }
            let key = self
                .keys
                .entry(id)
                .or_insert_with(|| group_key(pid, self.autogroup, &self.mountinfo))
                .clone();
            match key {
                Some(key) if key == target_key => same += busy,
                Some(_) => other += busy,
                None => {}
            }
        }
        self.keys.retain(|id, _| ticks.contains_key(id));
        self.ticks = ticks;
        if same + other >= MIN_TICKS {
            self.apart = Some(same as f64 <= SAME_GROUP_AT_MOST * (same + other) as f64);
        }
    }
}

/// The scheduling group process `pid` runs in: its effective CPU cgroup,
/// and its autogroup where that cgroup is the root and autogroup is on;
/// `None` when unreadable (it ended, or belongs to another user).
fn group_key(pid: i32, autogroup: bool, mountinfo: &str) -> Option<String> {
    let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = cpu_cgroup(&cgroups, |dir| {
        let dirs = cgroup_dirs(if dir.is_empty() { "/" } else { dir }, None, mountinfo);
        dirs.iter()
            .find_map(|d| std::fs::read_to_string(d.join("cgroup.subtree_control")).ok())
    })?;
    if path == "/" && autogroup {
        let group = std::fs::read_to_string(format!("/proc/{pid}/autogroup")).ok()?;
        return Some(format!("/ {}", autogroup_name(&group)));
    }
    Some(path)
}

/// The autogroup a /proc/PID/autogroup text names (`/autogroup-7 nice 0`);
/// the file is empty for a process of the root group (init's session, and
/// every process that never started a session of its own).
fn autogroup_name(text: &str) -> &str {
    text.split_whitespace().next().unwrap_or("root")
}

/// The CPU cgroup in a /proc/PID/cgroup text (malformed lines skipped): the
/// v1 hierarchy holding the `cpu` controller, else the v2 path cut below the last directory whose
/// parent enables `cpu` for its children (`subtree_control` reads a
/// directory's cgroup.subtree_control, `""` being the root).
fn cpu_cgroup(text: &str, subtree_control: impl Fn(&str) -> Option<String>) -> Option<String> {
    let mut unified = None;
    for (controllers, path) in cgroup_entries(text) {
        if controllers.is_empty() {
            unified = Some(path);
        } else if names_controller(controllers, "cpu") {
            return Some(path.to_owned());
        }
    }
    let mut effective = String::new();
    for part in unified?.split('/').filter(|p| !p.is_empty()) {
        let enabled = subtree_control(&effective).is_some_and(|s| s.split_whitespace().any(|c| c == "cpu"));
        if !enabled {
            break;
        }
        effective.push('/');
        effective.push_str(part);
    }
    Some(if effective.is_empty() {
        "/".to_owned()
    } else {
        effective
    })
}

/// The slice Linux gives a woken thread on a machine of `cpus` CPUs: the
/// scheduler's debugfs value when readable (already scaled), else
/// [`default_slice_s`].
fn linux_slice_s(cpus: usize) -> f64 {
    std::fs::read_to_string("/sys/kernel/debug/sched/base_slice_ns")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|ns| *ns > 0.0)
        .map_or_else(|| default_slice_s(cpus), |ns| ns / 1e9)
}

/// EEVDF's default slice, scaled as the kernel does by `1 + log2(min(CPUs, 8))`.
fn default_slice_s(cpus: usize) -> f64 {
    BASE_SLICE_S * f64::from(1 + cpus.clamp(1, 8).ilog2())
}

/// One thread's run time per voluntary sleep, read every [`GRAIN_EVERY`]
/// periods.
#[derive(Debug, Default)]
pub(super) struct Grain {
    ran_ns: u64,
    periods: u32,
    voluntary: Option<u64>,
    grain_s: Option<f64>,
}

impl Grain {
    /// Adds a period in which the thread ran `ran_ns`; every
    /// [`GRAIN_EVERY`] periods reads its voluntary switches (`read`) and
    /// works the grain out. Returns the grain last found.
    pub(super) fn update(&mut self, ran_ns: u64, read: impl FnOnce() -> Option<u64>) -> Option<f64> {
        self.ran_ns = self.ran_ns.saturating_add(ran_ns);
        self.periods += 1;
        if self.voluntary.is_some() && self.periods < GRAIN_EVERY {
            return self.grain_s;
        }
        let Some(now) = read() else {
            return self.grain_s;
        };
        if let Some(before) = self.voluntary {
            let sleeps = now.saturating_sub(before);
            self.grain_s = (sleeps > 0).then(|| self.ran_ns as f64 / 1e9 / sleeps as f64);
        }
        self.voluntary = Some(now);
        self.ran_ns = 0;
        self.periods = 0;
        self.grain_s
    }
}

/// The voluntary context switches of thread `tid` of `pid` so far.
pub(super) fn voluntary_switches(pid: u32, tid: u32) -> Option<u64> {
    procfs::process::Process::new(pid as i32)
        .ok()?
        .task_from_tid(tid as i32)
        .ok()?
        .status()
        .ok()?
        .voluntary_ctxt_switches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_cgroup_is_the_v1_cpu_line_or_the_v2_path_where_cpu_is_enabled() {
        let none = |_: &str| None;
        assert_eq!(
            cpu_cgroup("4:memory:/a\n2:cpu,cpuacct:/user.slice/x\n0::/", none).as_deref(),
            Some("/user.slice/x")
        );
        // v2: the root enables cpu for its children, user.slice does not.
        let control = |dir: &str| match dir {
            "" => Some("cpuset cpu io memory pids".to_owned()),
            "/user.slice" => Some("memory pids".to_owned()),
            _ => None,
        };
        assert_eq!(
            cpu_cgroup("0::/user.slice/user-1000.slice/session-3.scope\n", control).as_deref(),
            Some("/user.slice")
        );
        assert_eq!(cpu_cgroup("0::/\n", control).as_deref(), Some("/"));
        assert_eq!(cpu_cgroup("0::/user.slice\n", none).as_deref(), Some("/"));
        assert_eq!(cpu_cgroup("garbage", none), None);
    }

    #[test]
    fn a_process_that_never_started_a_session_is_in_the_root_autogroup() {
        assert_eq!(autogroup_name("/autogroup-3294 nice 0\n"), "/autogroup-3294");
        // What the kernel prints for a task of the root task group.
        assert_eq!(autogroup_name(""), "root");
        assert_ne!(autogroup_name(""), autogroup_name("/autogroup-1 nice 0"));
    }

    #[test]
    fn the_v2_subtree_control_is_read_where_the_v2_hierarchy_is_mounted() {
        // A hybrid layout: cpu in v1, v2 at /sys/fs/cgroup/unified.
        let mounts = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n\
                      35 31 0:32 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n";
        assert_eq!(
            cgroup_dirs("/", None, mounts),
            vec![std::path::PathBuf::from("/sys/fs/cgroup/unified/")]
        );
        assert_eq!(
            cgroup_dirs("/a/b", Some("cpu"), mounts),
            vec![std::path::PathBuf::from("/sys/fs/cgroup/cpu/a/b")]
        );
    }

    #[test]
    fn the_grain_is_the_run_time_per_sleep_over_the_last_reads() {
        let mut grain = Grain::default();
        // The first read only starts the count.
        assert_eq!(grain.update(1_000_000, || Some(100)), None);
        for _ in 1..GRAIN_EVERY {
            assert_eq!(
                grain.update(1_000_000, || panic!("read only every GRAIN_EVERY periods")),
                None
            );
        }
        // 20 ms run over 40 sleeps: 0.5 ms each.
        let found = grain.update(1_000_000, || Some(140)).expect("slept");
        assert!((found - 0.5e-3).abs() < 1e-12, "{found}");
        // A thread that never slept since has no grain.
        for _ in 1..GRAIN_EVERY {
            grain.update(1_000_000, || None);
        }
        assert_eq!(grain.update(1_000_000, || Some(140)), None);
    }

    #[test]
    fn the_default_slice_grows_with_the_cpus_up_to_eight() {
        assert!((default_slice_s(1) - 0.75e-3).abs() < 1e-12);
        assert!((default_slice_s(2) - 1.5e-3).abs() < 1e-12);
        assert!((default_slice_s(256) - 3.0e-3).abs() < 1e-12);
    }
}
