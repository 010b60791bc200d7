//! `best-static`: the best fixed per-thread pinning, found by trying them:
//! the hindsight optimum a static pinning tool (taskset per thread) could reach.
//!
//! ```text
//!   calibration run (watch_threads without pins) ─► worker thread names ("aco-0".."aco-7", "pipe-0-0", "pipe-1-0", ...)
//!        │ classes(): threads differing only in their trailing number do the same work
//!        ▼            ("aco" x8; "pipe-0" x4, "pipe-1" x2, "pipe-2" x2)
//!   candidates(): for every class, every split of its threads over the cores
//!        │        (the count vectors), crossed over classes; cores the scenario's
//!        │        load treats alike are exchangeable, so duplicates are dropped
//!        ▼        (skipped when there are more than --best-static-max)
//!   search: each candidate runs once ─► the fastest is best-static's assignment
//!        ▼
//!   every best-static run: pinlearn work ... (no manager); watch_threads()
//!   scans the process's threads every millisecond (the engine's TaskWatcher)
//!   and pins each worker by name to its core as soon as it appears (the
//!   engine's set_affinity: any number of CPUs), then stops
//! ```
//!
//! The same work is then measured `--repeat` times like every other
//! scheduler; picking the fastest of single noisy runs flatters the winner a
//! little in the search, not in those repeats.

use pinlearn_engine::live::{TaskWatcher, set_affinity, thread_name};
use pinlearn_topology::CpuSet;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Threads that do the same work: names equal up to a trailing `-NUMBER`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadClass {
    pub name: String,
    /// Thread names in the order of their number.
    pub members: Vec<String>,
}

/// Groups worker thread names into classes, ordered by class name.
pub fn classes(thread_names: &[String]) -> Vec<ThreadClass> {
    let mut by_class: BTreeMap<String, Vec<(u64, String)>> = BTreeMap::new();
    for name in thread_names {
        let (class, number) = class_of(name);
        by_class
            .entry(class.to_string())
            .or_default()
            .push((number, name.clone()));
    }
    by_class
        .into_iter()
        .map(|(name, mut members)| {
            members.sort();
            ThreadClass {
                name,
                members: members.into_iter().map(|(_, n)| n).collect(),
            }
        })
        .collect()
}

/// A thread name's class and number: `pipe-0-12` is thread 12 of `pipe-0`;
/// a name without a trailing number is its own class.
fn class_of(name: &str) -> (&str, u64) {
    match name.rsplit_once('-') {
        Some((class, digits)) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            (class, digits.parse().unwrap_or(u64::MAX))
        }
        _ => (name, 0),
    }
}

/// A fixed pinning: `counts[class][core]` threads of each class on each core.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Assignment {
    pub counts: Vec<Vec<usize>>,
}

impl Assignment {
    /// Thread name ─► the CPUs of its core: the threads of a class fill the
    /// cores in order (the first `counts[k][0]` on core 0, ...).
    pub fn pin_map(&self, classes: &[ThreadClass], cores: &[CpuSet]) -> HashMap<String, CpuSet> {
        let mut map = HashMap::new();
        for (class, counts) in classes.iter().zip(&self.counts) {
            let slots = counts
                .iter()
                .enumerate()
                .flat_map(|(core, &n)| std::iter::repeat_n(core, n));
            for (name, core) in class.members.iter().zip(slots) {
                map.insert(name.clone(), cores[core].clone());
            }
        }
        map
    }

    /// E.g. `aco 3+5` or `pipe-0 2+2, pipe-1 1+1, pipe-2 0+2` (threads per core).
    pub fn describe(&self, classes: &[ThreadClass]) -> String {
        classes
            .iter()
            .zip(&self.counts)
            .map(|(class, counts)| {
                let per_core: Vec<String> = counts.iter().map(ToString::to_string).collect();
                format!("{} {}", class.name, per_core.join("+"))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// best-static's candidates in one scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidates {
    pub classes: Vec<ThreadClass>,
    pub assignments: Vec<Assignment>,
}

/// Why best-static cannot run in a scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TooMany {
    pub candidates: u128,
    pub max: usize,
}

impl std::fmt::Display for TooMany {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} distinct pinnings to try, more than --best-static-max {}",
            self.candidates, self.max
        )
    }
}

/// Raw enumerations beyond this are refused before enumerating.
const MAX_RAW: u128 = 1_000_000;

/// Every distinct assignment of the classes' threads to `cores` cores, given
/// groups of exchangeable cores; at most `max` of them, else `TooMany`.
pub fn candidates(
    class_sizes: &[usize],
    cores: usize,
    groups: &[Vec<usize>],
    max: usize,
) -> Result<Vec<Assignment>, TooMany> {
    let cores = cores.max(1);
    let raw = class_sizes
        .iter()
        .fold(1u128, |acc, &n| acc.saturating_mul(binomial(n + cores - 1, cores - 1)));
    if raw > MAX_RAW {
        return Err(TooMany { candidates: raw, max });
    }
    let per_class: Vec<Vec<Vec<usize>>> = class_sizes.iter().map(|&n| compositions(n, cores)).collect();
    let mut distinct = BTreeSet::new();
    let mut choice = vec![0usize; per_class.len()];
    loop {
        let counts: Vec<Vec<usize>> = choice.iter().zip(&per_class).map(|(&i, c)| c[i].clone()).collect();
        distinct.insert(canonical(Assignment { counts }, groups));
        // Next combination (odometer over the classes).
        let mut k = 0;
        while k < choice.len() {
            choice[k] += 1;
            if choice[k] < per_class[k].len() {
                break;
            }
            choice[k] = 0;
            k += 1;
        }
        if k == choice.len() {
            break;
        }
    }
    if distinct.len() > max {
        return Err(TooMany {
            candidates: distinct.len() as u128,
            max,
        });
    }
    Ok(distinct.into_iter().collect())
}

/// All ways to write `n` as an ordered sum of `parts` non-negative numbers.
pub fn compositions(n: usize, parts: usize) -> Vec<Vec<usize>> {
    if parts == 0 {
        return if n == 0 { vec![vec![]] } else { vec![] };
    }
    if parts == 1 {
        return vec![vec![n]];
    }
    (0..=n)
        .rev()
        .flat_map(|first| {
            compositions(n - first, parts - 1).into_iter().map(move |mut rest| {
                rest.insert(0, first);
                rest
            })
        })
        .collect()
}

/// The representative of an assignment's equivalence class: within each
/// group of exchangeable cores, the cores' per-class count tuples sorted in
/// decreasing order.
fn canonical(assignment: Assignment, groups: &[Vec<usize>]) -> Assignment {
    let mut counts = assignment.counts;
    for group in groups {
        let mut tuples: Vec<Vec<usize>> = group
            .iter()
            .map(|&core| counts.iter().map(|per_core| per_core[core]).collect())
            .collect();
        tuples.sort_by(|a, b| b.cmp(a));
        for (&core, tuple) in group.iter().zip(tuples) {
            for (class, n) in tuple.into_iter().enumerate() {
                counts[class][core] = n;
            }
        }
    }
    Assignment { counts }
}

fn binomial(n: usize, k: usize) -> u128 {
    if k > n {
        return 0;
    }
    let k = k.min(n - k);
    (0..k).fold(1u128, |acc, i| acc.saturating_mul((n - i) as u128) / (i as u128 + 1))
}

/// What [`watch_threads`] saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Watched {
    /// The watcher's own CPU time.
    pub cpu: Duration,
    /// Names of the process's threads but its main thread, in the order seen.
    pub names: Vec<String>,
}

/// Watches the threads of process `pid` through /proc, pinning each thread
/// named in `pins` to its CPUs as soon as it appears.
///
/// With pins it looks every millisecond and stops once all are pinned (so
/// a best-static run pays for nothing after its start); without pins it
/// looks every 5 ms until the process ends or `stop` is set, to learn the
/// workload's thread names (a calibration run). Threads of classes the pins
/// do not mention are left alone; a thread of a pinned class that is not in
/// `pins` is an error (the workload has other threads than the calibration
/// run had). A pinned name that never appears before the process ends is
/// not an error: in a run of a few milliseconds a thread can start and end
/// between two looks.
pub fn watch_threads(pid: u32, pins: &HashMap<String, CpuSet>, stop: &AtomicBool) -> Result<Watched, String> {
    let cpu_at_start = thread_cpu_time();
    let mut pending: HashMap<&str, &CpuSet> = pins.iter().map(|(name, cpus)| (name.as_str(), cpus)).collect();
    let pinned_classes: BTreeSet<&str> = pins.keys().map(|name| class_of(name).0).collect();
    let interval = Duration::from_millis(if pins.is_empty() { 5 } else { 1 });
    let mut named: BTreeSet<u32> = BTreeSet::new();
    let mut names: Vec<String> = Vec::new();
    let started = Instant::now();
    let mut tasks = TaskWatcher::new(pid, false);
    while !stop.load(Ordering::Relaxed) && (pins.is_empty() || !pending.is_empty()) {
        // Read every time: right after fork the child still has the bench's
        // name; its threads exist only after exec.
        let Some(parent_name) = thread_name(pid, pid) else {
            break;
        };
        let scan = tasks.scan();
        if scan.threads.is_empty() {
            break;
        }
        for (_, tid) in scan.threads {
            if tid == pid || named.contains(&tid) {
                continue;
            }
            let Some(name) = thread_name(pid, tid) else {
                continue;
            };
            // A thread names itself right after it starts: until then it
            // carries its parent's name, and is looked at again next time.
            if name == parent_name {
                continue;
            }
            named.insert(tid);
            match pending.remove(name.as_str()) {
                Some(cpus) => set_affinity(tid, cpus)
                    .map_err(|e| format!("cannot pin thread {name} ({tid}) to CPUs {cpus}: {e}"))?,
                None if pins.contains_key(&name) || !pinned_classes.contains(class_of(&name).0) => {}
                None => {
                    return Err(format!(
                        "thread {name} is not in the pinning (the workload's threads differ from the calibration run's)"
                    ));
                }
            }
            names.push(name);
        }
        if !pending.is_empty() && started.elapsed() > Duration::from_secs(60) {
            let mut missing: Vec<&str> = pending.into_keys().collect();
            missing.sort_unstable();
            return Err(format!("threads {} never appeared within 60 s", missing.join(", ")));
        }
        // Polling /proc is the only way to see new threads of another process.
        std::thread::sleep(interval);
    }
    Ok(Watched {
        cpu: thread_cpu_time().saturating_sub(cpu_at_start),
        names,
    })
}

fn thread_cpu_time() -> Duration {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(Duration::from)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn classes_group_by_name_without_the_trailing_number() {
        let found = classes(&names(&["pipe-1-0", "pipe-0-10", "pipe-0-2", "aco", "pipe-0-0"]));
        assert_eq!(
            found,
            vec![
                ThreadClass {
                    name: "aco".into(),
                    members: names(&["aco"])
                },
                ThreadClass {
                    name: "pipe-0".into(),
                    members: names(&["pipe-0-0", "pipe-0-2", "pipe-0-10"])
                },
                ThreadClass {
                    name: "pipe-1".into(),
                    members: names(&["pipe-1-0"])
                },
            ]
        );
    }

    #[test]
    fn compositions_are_all_ordered_splits() {
        assert_eq!(compositions(2, 2), vec![vec![2, 0], vec![1, 1], vec![0, 2]]);
        // C(n+m-1, m-1): 8 threads on 2 cores 9, 4 threads on 3 cores 15.
        assert_eq!(compositions(8, 2).len(), 9);
        assert_eq!(compositions(4, 3).len(), 15);
        assert!(compositions(4, 3).iter().all(|c| c.iter().sum::<usize>() == 4));
        assert_eq!(binomial(6, 2), 15);
    }

    #[test]
    fn exchangeable_cores_halve_the_candidates() {
        // 4 identical threads on 2 cores: 5 splits when the cores differ
        // (a loaded and a free core), 3 when they are alike (4+0, 3+1, 2+2).
        let loaded = candidates(&[4], 2, &[vec![0], vec![1]], 16).expect("few");
        assert_eq!(loaded.len(), 5);
        let uniform = candidates(&[4], 2, &[vec![0, 1]], 16).expect("few");
        let counts: Vec<Vec<usize>> = uniform.iter().map(|a| a.counts[0].clone()).collect();
        assert_eq!(counts.len(), 3);
        assert!(counts.contains(&vec![4, 0]) && counts.contains(&vec![3, 1]) && counts.contains(&vec![2, 2]));
        // Two classes of one thread on 2 alike cores: together, or apart (one way).
        let two = candidates(&[1, 1], 2, &[vec![0, 1]], 16).expect("few");
        assert_eq!(two.len(), 2);
    }

    #[test]
    fn too_many_candidates_are_refused() {
        let err = candidates(&[4, 2, 2], 2, &[vec![0], vec![1]], 16).expect_err("45 > 16");
        assert_eq!(err.candidates, 45);
        let huge = candidates(&[64], 32, &[(0..32).collect()], 16).expect_err("astronomical");
        assert!(huge.candidates > MAX_RAW);
    }

    #[test]
    fn pin_map_fills_cores_in_order_and_describe_says_the_split() {
        let found = classes(&names(&["aco-0", "aco-1", "aco-2"]));
        let cores = [CpuSet::from_iter([0]), CpuSet::from_iter([1, 3])];
        let assignment = Assignment {
            counts: vec![vec![1, 2]],
        };
        let map = assignment.pin_map(&found, &cores);
        assert_eq!(map["aco-0"], cores[0]);
        assert_eq!(map["aco-1"], cores[1]);
        assert_eq!(map["aco-2"], cores[1]);
        assert_eq!(assignment.describe(&found), "aco 1+2");
    }

    #[test]
    fn the_watcher_pins_a_named_thread_of_a_live_process() {
        // This test process: name a thread, pin it to a CPU it may use.
        let allowed = pinlearn_engine::live::get_affinity(0).expect("affinity");
        let cpu = allowed.last().expect("a CPU");
        // Named threads that wait until told to report their own mask.
        let start = |name: &str| {
            let (ready_tx, ready_rx) = std::sync::mpsc::channel();
            let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
            let worker = std::thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    ready_tx.send(()).expect("send");
                    done_rx.recv().ok();
                    pinlearn_engine::live::get_affinity(0).expect("affinity")
                })
                .expect("spawn");
            ready_rx.recv().expect("worker started");
            (worker, done_tx)
        };
        let (worker, done) = start("bench-pin-7");
        // The test harness's other threads belong to no mapped class: left alone.
        let map = HashMap::from([("bench-pin-7".to_string(), CpuSet::from_iter([cpu]))]);
        let stop = AtomicBool::new(false);
        let watched = watch_threads(std::process::id(), &map, &stop).expect("pinned");
        assert!(watched.names.contains(&"bench-pin-7".to_string()));
        done.send(()).expect("send");
        let mask = worker.join().expect("worker");
        assert_eq!(mask, CpuSet::from_iter([cpu]));

        // A thread of a mapped class missing from the map is a mismatch.
        let (extra, done) = start("bench-pin-8");
        let err = watch_threads(std::process::id(), &map, &stop).expect_err("bench-pin-8 is unknown");
        assert!(err.contains("bench-pin-8 is not in the pinning"), "{err}");
        done.send(()).expect("send");
        extra.join().expect("worker");
    }
}
