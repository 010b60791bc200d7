//! What the live target tells the crowd about wake-ups, on real processes: a
//! busy loop in another session (its own autogroup) is apart from the
//! target's group and a loop in the target's session is not; a thread that
//! sleeps every fraction of a millisecond shows a grain below a slice.
//! One test function: the two loops must not run at the same time.

use pinlearn_engine::Metric;
use pinlearn_engine::Target;
use pinlearn_engine::live::{LiveProcess, Scope, get_affinity};
use pinlearn_policy::ThreadSample;
use std::collections::HashSet;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A thread that works about 0.2 ms and sleeps 0.1 ms, over and over.
fn napper(stop: Arc<AtomicBool>, tids: Arc<Mutex<HashSet<u32>>>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        tids.lock().unwrap().insert(nix::unistd::gettid().as_raw() as u32);
        while !stop.load(Ordering::Relaxed) {
            let round = Instant::now();
            while round.elapsed() < Duration::from_micros(200) {
                std::hint::spin_loop();
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    })
}

/// A busy shell loop, in its own session (`setsid` execs in place) or in ours.
fn busy_loop(own_session: bool) -> Child {
    let mut command = if own_session {
        let mut c = Command::new("setsid");
        c.arg("sh");
        c
    } else {
        Command::new("sh")
    };
    command.args(["-c", "while :; do :; done"]).spawn().unwrap()
}

/// Whether this process runs in the root CPU cgroup, where a loop it starts
/// in a session of its own (inheriting its cgroup) gets an autogroup apart:
/// the v1 `cpu` hierarchy's path is `/`, or there is none and the v2
/// `cpu` controller is off below the root or the path is `/`.
fn in_the_root_cpu_cgroup() -> bool {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let entries: Vec<(&str, &str)> = cgroups
        .lines()
        .filter_map(|line| {
            let mut fields = line.splitn(3, ':');
            fields.next()?;
            Some((fields.next()?, fields.next()?))
        })
        .collect();
    if let Some((_, path)) = entries.iter().find(|(c, _)| c.split(',').any(|c| c == "cpu")) {
        return *path == "/";
    }
    let v2 = entries.iter().find(|(c, _)| c.is_empty()).map_or("/", |(_, path)| path);
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let root_enables_cpu = mounts
        .lines()
        .filter(|line| line.contains(" - cgroup2 "))
        .filter_map(|line| line.split(' ').nth(4))
        .filter_map(|point| std::fs::read_to_string(format!("{point}/cgroup.subtree_control")).ok())
        .any(|control| control.split_whitespace().any(|c| c == "cpu"));
    v2 == "/" || !root_enables_cpu
}

/// Observes the napper for `seconds` in periods of 50 ms; the last samples.
fn watch(tids: &Arc<Mutex<HashSet<u32>>>, seconds: f64) -> (LiveProcess, Vec<ThreadSample>) {
    let scope = Scope {
        only: Some(tids.clone()),
        ..Scope::process_tree(std::process::id(), false)
    };
    let mut target = LiveProcess::new(scope, Metric::Cpu, vec![get_affinity(0).unwrap()], 0.05);
    let mut samples = Vec::new();
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < seconds {
        samples.clear();
        target.observe(&mut samples).unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    (target, samples)
}

#[test]
fn another_session_s_loop_is_apart_and_a_napping_thread_shows_its_grain() {
    let autogroup = std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled").is_ok_and(|s| s.trim() == "1");
    let apart = autogroup && in_the_root_cpu_cgroup();
    let stop = Arc::new(AtomicBool::new(false));
    let tids = Arc::new(Mutex::new(HashSet::new()));
    let thread = napper(stop.clone(), tids.clone());
    while tids.lock().unwrap().is_empty() {
        std::thread::sleep(Duration::from_millis(1));
    }

    // Another session: apart wherever autogroup is on and decides (the loop
    // shares this process's CPU cgroup, which must be the root); then the
    // grain is read, 1 s after the first reading.
    let mut other = busy_loop(true);
    let (target, samples) = watch(&tids, 3.5);
    let read = |file: String| {
        std::fs::read_to_string(file)
            .unwrap_or_default()
            .trim()
            .replace('\n', " ")
    };
    let seen = format!(
        "autogroup {autogroup}; this process: {} [{}]; the loop: {} [{}]",
        read("/proc/self/cgroup".into()),
        read("/proc/self/autogroup".into()),
        read(format!("/proc/{}/cgroup", other.id())),
        read(format!("/proc/{}/autogroup", other.id())),
    );
    other.kill().unwrap();
    other.wait().unwrap();
    assert_eq!(target.wake_slice().is_some(), apart, "another session's loop: {seen}");
    if apart {
        let slice = target.wake_slice().unwrap();
        assert!((0.1e-3..=0.1).contains(&slice), "slice {slice} s");
        let grain = samples[0].grain_s.expect("the napper sleeps every round");
        assert!(grain < 2e-3, "0.2 ms of work between sleeps, read {grain} s");
    }

    // The same session: never apart, and no grain is read.
    let mut same = busy_loop(false);
    let (target, samples) = watch(&tids, 2.0);
    same.kill().unwrap();
    same.wait().unwrap();
    stop.store(true, Ordering::Relaxed);
    thread.join().unwrap();
    assert_eq!(target.wake_slice(), None, "a loop in the target's own session");
    assert_eq!(samples[0].grain_s, None);
}
