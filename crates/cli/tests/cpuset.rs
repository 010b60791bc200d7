//! A cgroup cpuset that changes during a run (as Slurm or a container
//! runtime does): pinlearn follows it within a period, never asks for a CPU
//! outside it, and says so once per change. Uses a real cpuset cgroup
//! (v1 here; root).

mod common;

use common::*;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

/// A new cpuset cgroup (v1 hierarchy), removed when dropped.
struct Cpuset(PathBuf);

impl Cpuset {
    fn create(cpus: &str) -> Option<Cpuset> {
        let root = PathBuf::from("/sys/fs/cgroup/cpuset");
        let mems = std::fs::read_to_string(root.join("cpuset.effective_mems")).ok()?;
        let dir = root.join(format!("pinlearn-test-{}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let set = Cpuset(dir);
        set.write("cpuset.mems", mems.trim());
        set.write("cpuset.cpus", cpus);
        Some(set)
    }

    fn write(&self, file: &str, value: &str) {
        std::fs::write(self.0.join(file), value).unwrap_or_else(|e| panic!("write {value} to {file}: {e}"));
    }
}

impl Drop for Cpuset {
    fn drop(&mut self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn pinlearn_follows_a_cpuset_that_shrinks_and_grows() {
    let allowed = pinlearn_topology::CpuSet::parse_list(&allowed_cpus()).expect("own mask");
    if allowed.len() < 2 {
        skip(&format!("needs 2 CPUs, this test may use {allowed}"));
        return;
    }
    let both: Vec<usize> = allowed.iter().take(2).collect();
    let both_list = format!("{},{}", both[0], both[1]);
    let Some(cpuset) = Cpuset::create(&both_list) else {
        skip("cannot create a cpuset cgroup under /sys/fs/cgroup/cpuset (needs root and cgroup v1's cpuset)");
        return;
    };
    let target = light_target(&both_list, 3);
    let pid = target.0.id();
    cpuset.write("cgroup.procs", &pid.to_string());
    let dir = tempfile::tempdir().expect("temp dir");
    let summary_file = dir.path().join("summary.json");
    let mut manager = pinlearn()
        .args(["attach", "--interval", "20ms", "--policy", "static", "--json"])
        .arg(&summary_file)
        .arg(pid.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("attach");
    std::thread::sleep(Duration::from_millis(300));

    // Shrink to the second CPU: the kernel moves every thread there, and
    // pinlearn must not ask for the first one any more (the kernel would refuse).
    let second = both[1].to_string();
    cpuset.write("cpuset.cpus", &second);
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        manager.try_wait().expect("poll").is_none(),
        "pinlearn died when the cpuset shrank"
    );
    for (tid, mask) in masks(pid) {
        assert_eq!(mask, second, "thread {tid} is outside the cpuset");
    }

    // Grow back: pinlearn places on both again.
    cpuset.write("cpuset.cpus", &both_list);
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        manager.try_wait().expect("poll").is_none(),
        "pinlearn died when the cpuset grew"
    );

    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(manager.id() as libc::pid_t, libc::SIGTERM) };
    let out = manager.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&summary_file).expect("summary")).expect("JSON");
    let notes: Vec<&str> = summary["notes"]
        .as_array()
        .map(|notes| notes.iter().filter_map(|n| n.as_str()).collect())
        .unwrap_or_default();
    let changes = notes.iter().filter(|n| n.contains("cgroup cpuset")).count();
    assert_eq!(changes, 2, "one note per change: {notes:?}");
    assert_eq!(stderr(&out).matches("cgroup cpuset").count(), 2, "{}", stderr(&out));
    drop(target);
}
