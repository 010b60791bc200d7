//! A thread's memory following it, from the live side: a thread of this
//! process first-touches a fresh mapping while pinlearn records its page
//! faults, then its pages are moved to a node with move_pages(2). This
//! machine may have one memory node, so the two layout nodes of the test
//! both stand for OS node 0: the pages are found, handed to the kernel and
//! reported on the node asked for, which is all that differs from a real
//! cross-node move but the copy.

use pinlearn_engine::Metric;
use pinlearn_engine::Target;
use pinlearn_engine::live::{LiveProcess, Scope, get_affinity};
use pinlearn_policy::ThreadSample;
use pinlearn_topology::CpuSet;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PAGES: usize = 2048;

/// `PAGES` fresh pages (an anonymous mapping of their own, so none was
/// touched before: an allocator may hand out memory it used already),
/// each first-touched; never unmapped (the tests are short).
fn first_touch() -> usize {
    let len = PAGES * 4096;
    // SAFETY: an anonymous private mapping, written inside its length.
    unsafe {
        let start = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(start, libc::MAP_FAILED, "mmap");
        for offset in (0..len).step_by(4096) {
            std::ptr::write_volatile((start as *mut u8).add(offset), 1);
        }
        start as usize
    }
}

/// Waits until `n` threads have put their tids in `tids`.
fn until_started(tids: &Mutex<HashSet<u32>>, n: usize) {
    while tids.lock().unwrap().len() < n {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The tests count this process's perf events: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Perf events open in this process.
fn perf_events_open() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().contains("perf_event"))
        .count()
}

/// A thread that waits for step 1, first-touches `PAGES` fresh pages, says
/// so (step 2) and waits for step 3 before it unmaps them and ends. It
/// spins while it waits: a thread switched to rarely, whose fault event
/// stays open.
fn toucher(step: Arc<AtomicU32>, tids: Arc<Mutex<HashSet<u32>>>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        tids.lock().unwrap().insert(nix::unistd::gettid().as_raw() as u32);
        while step.load(Ordering::SeqCst) < 1 {
            std::hint::spin_loop();
        }
        first_touch();
        step.store(2, Ordering::SeqCst);
        while step.load(Ordering::SeqCst) < 3 {
            std::hint::spin_loop();
        }
    })
}

fn watched(tids: &Arc<Mutex<HashSet<u32>>>, thread_memory: bool) -> LiveProcess {
    watched_on(tids, thread_memory.then(|| vec![0, 0]))
}

/// Watched with threads' memory on where `nodes` says which OS memory node
/// each of two layout nodes stands for: the first has all the CPUs this
/// process may use, the second none.
fn watched_on(tids: &Arc<Mutex<HashSet<u32>>>, nodes: Option<Vec<u32>>) -> LiveProcess {
    let scope = Scope {
        only: Some(tids.clone()),
        ..Scope::process_tree(std::process::id(), false)
    };
    let cpus = get_affinity(0).unwrap();
    let target = LiveProcess::new(scope, Metric::Cpu, vec![cpus.clone()], 0.05);
    match nodes {
        Some(nodes) => target.with_thread_memory(nodes, vec![cpus, CpuSet::default()]),
        None => target,
    }
}

#[test]
fn the_share_of_a_thread_s_pages_away_from_the_node_it_runs_on_is_measured() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    // The pages are on OS node 0 (every machine has one). With the CPUs'
    // layout node standing for node 0 they are all local; standing for
    // another node, all remote. Both layout nodes on one OS node: nothing
    // can be remote, nothing is read.
    for (nodes, expected) in [(vec![0, 1], Some(0.0)), (vec![1, 0], Some(1.0)), (vec![0, 0], None)] {
        let step = Arc::new(AtomicU32::new(0));
        let tids = Arc::new(Mutex::new(HashSet::new()));
        let thread = toucher(step.clone(), tids.clone());
        until_started(&tids, 1);
        let mut target = watched_on(&tids, Some(nodes.clone()));
        let mut samples: Vec<ThreadSample> = Vec::new();
        target.observe(&mut samples).unwrap();
        assert_eq!(target.remote(), None, "{nodes:?}: no page recorded yet");
        step.store(1, Ordering::SeqCst);
        while step.load(Ordering::SeqCst) < 2 {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Each thread's pages are read every few periods, in turns.
        let mut remote = None;
        for _ in 0..8 {
            std::thread::sleep(Duration::from_millis(5));
            samples.clear();
            target.observe(&mut samples).unwrap();
            remote = remote.or(target.remote());
        }
        step.store(3, Ordering::SeqCst);
        thread.join().unwrap();
        assert_eq!(remote, expected, "{nodes:?}");
    }
}

#[test]
fn the_pages_a_thread_touched_while_watched_move_to_the_node_asked_for() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    for thread_memory in [true, false] {
        let step = Arc::new(AtomicU32::new(0));
        let tids = Arc::new(Mutex::new(HashSet::new()));
        let thread = toucher(step.clone(), tids.clone());
        until_started(&tids, 1);
        let mut target = watched(&tids, thread_memory);
        let mut samples: Vec<ThreadSample> = Vec::new();
        target.observe(&mut samples).unwrap();
        let key = samples.first().expect("the thread is watched").key;
        step.store(1, Ordering::SeqCst);
        while step.load(Ordering::SeqCst) < 2 {
            std::thread::sleep(Duration::from_millis(1));
        }
        samples.clear();
        target.observe(&mut samples).unwrap();
        let moved = target.move_thread_memory(key, 1).unwrap();
        let pages = target.thread_pages_moved();
        assert!(
            !target.move_thread_memory(key + (1 << 40), 1).unwrap(),
            "no such thread"
        );
        step.store(3, Ordering::SeqCst);
        thread.join().unwrap();
        if thread_memory {
            assert!(moved, "its pages were found and moved");
            let (pages, seconds) = pages.expect("thread memory on");
            assert!(pages as usize >= PAGES, "every page it touched: {pages}");
            assert!(seconds > 0.0 && seconds < 1.0, "{seconds} s");
            assert!(
                target.take_notes().iter().all(|note| !note.contains("memory")),
                "nothing refused"
            );
        } else {
            assert!(!moved && pages.is_none(), "off unless asked for");
        }
    }
}

/// A thread that sleeps 100 us at a time (thousands of switches a second),
/// first-touching `PAGES` fresh pages whenever `touch` is 1 (and lowering
/// it), until it is 2.
fn napper(touch: Arc<AtomicU32>, tids: Arc<Mutex<HashSet<u32>>>) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        tids.lock().unwrap().insert(nix::unistd::gettid().as_raw() as u32);
        let mut kept = Vec::new();
        loop {
            match touch.load(Ordering::SeqCst) {
                0 => std::thread::sleep(Duration::from_micros(100)),
                1 => {
                    kept.push(first_touch());
                    touch.store(0, Ordering::SeqCst);
                }
                _ => return kept.len(),
            }
        }
    })
}

#[test]
fn a_thread_switched_to_often_has_its_fault_event_open_only_while_it_faults() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let touch = Arc::new(AtomicU32::new(0));
    let tids = Arc::new(Mutex::new(HashSet::new()));
    let thread = napper(touch.clone(), tids.clone());
    until_started(&tids, 1);
    let mut target = watched(&tids, true);
    let mut samples: Vec<ThreadSample> = Vec::new();
    let mut period = |target: &mut LiveProcess| {
        std::thread::sleep(Duration::from_millis(50));
        samples.clear();
        target.observe(&mut samples).unwrap();
        samples.first().expect("the thread is watched").key
    };
    let key = period(&mut target);
    assert_eq!(perf_events_open(), 1, "open from the start");
    for _ in 0..3 {
        period(&mut target);
    }
    assert_eq!(
        perf_events_open(),
        0,
        "closed: it naps thousands of times a second and takes no faults"
    );
    // It faults with its event closed: those pages are not recorded, but
    // its fault count opens the event again within four periods.
    touch.store(1, Ordering::SeqCst);
    while touch.load(Ordering::SeqCst) != 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    for _ in 0..4 {
        period(&mut target);
        if perf_events_open() == 1 {
            break;
        }
    }
    assert_eq!(perf_events_open(), 1, "open again once its fault count grew");
    touch.store(1, Ordering::SeqCst);
    while touch.load(Ordering::SeqCst) != 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    period(&mut target);
    assert!(target.move_thread_memory(key, 1).unwrap());
    let (pages, _) = target.thread_pages_moved().expect("thread memory on");
    assert!(
        (PAGES as u64..2 * PAGES as u64).contains(&pages),
        "the second touch's pages, not the first's: {pages}"
    );
    touch.store(2, Ordering::SeqCst);
    assert_eq!(thread.join().unwrap(), 2);
}

/// Threads of this process that sleep 20 ms at a time until stopped.
struct Sleepers {
    stop: Arc<AtomicU32>,
    tids: Arc<Mutex<HashSet<u32>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Sleepers {
    /// `n` of them, started and their tids known.
    fn start(n: usize) -> Self {
        let stop = Arc::new(AtomicU32::new(0));
        let tids = Arc::new(Mutex::new(HashSet::new()));
        let threads = (0..n)
            .map(|_| {
                let (stop, tids) = (stop.clone(), tids.clone());
                std::thread::spawn(move || {
                    tids.lock().unwrap().insert(nix::unistd::gettid().as_raw() as u32);
                    while stop.load(Ordering::SeqCst) == 0 {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                })
            })
            .collect();
        until_started(&tids, n);
        Sleepers { stop, tids, threads }
    }

    /// Stops them and waits for them to end.
    fn end(self) {
        self.stop.store(1, Ordering::SeqCst);
        for thread in self.threads {
            thread.join().unwrap();
        }
    }
}

#[test]
fn at_most_256_threads_have_their_faults_recorded_at_once_and_the_rest_is_said() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let sleepers = Sleepers::start(260);
    let mut target = watched(&sleepers.tids, true);
    let mut samples = Vec::new();
    target.observe(&mut samples).unwrap();
    assert_eq!(samples.len(), 260);
    assert_eq!(perf_events_open(), 256);
    let notes = target.take_notes();
    assert!(
        notes.iter().any(|note| note.contains("more than 256 threads")),
        "{notes:?}"
    );
    let tids = sleepers.tids.clone();
    sleepers.end();
    samples.clear();
    target.observe(&mut samples).unwrap();
    assert!(samples.is_empty());
    assert_eq!(perf_events_open(), 0);
    // The ended threads' places are free: a new thread is recorded.
    tids.lock().unwrap().clear();
    let step = Arc::new(AtomicU32::new(0));
    let late = toucher(step.clone(), tids.clone());
    until_started(&tids, 1);
    samples.clear();
    target.observe(&mut samples).unwrap();
    assert_eq!((samples.len(), perf_events_open()), (1, 1));
    step.store(1, Ordering::SeqCst);
    while step.load(Ordering::SeqCst) < 2 {
        std::thread::sleep(Duration::from_millis(1));
    }
    step.store(3, Ordering::SeqCst);
    late.join().unwrap();
}

/// Bytes an unprivileged user may lock for perf rings with no
/// `RLIMIT_MEMLOCK`: `perf_event_mlock_kb` per online CPU.
fn perf_lock_budget() -> usize {
    let kb: usize = std::fs::read_to_string("/proc/sys/kernel/perf_event_mlock_kb")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: sysconf has no preconditions.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    kb * 1024 * cpus
}

#[test]
fn an_unprivileged_user_short_of_locked_memory_has_smaller_rings_not_none() {
    use std::os::unix::process::CommandExt;
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    if !nix::unistd::Uid::effective().is_root() {
        eprintln!("skipped: needs root to run the test as another user");
        return;
    }
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child
        .args([
            "--ignored",
            "--exact",
            "--nocapture",
            "recorded_as_nobody_with_no_memlock",
        ])
        .uid(65534)
        .gid(65534);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs here.
    unsafe {
        child.pre_exec(|| {
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_MEMLOCK, 0, 0)
                .map_err(std::io::Error::from)
        });
    }
    let out = child.output().expect("the test binary, as nobody");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "the child ran its test: {text}");
}

/// The body of the test above, as `nobody` with no `RLIMIT_MEMLOCK`:
/// more threads than full-size rings fit in what the user may lock are
/// recorded (the rings shrink), the threads beyond the smallest rings'
/// room are left unrecorded, each said once, and the rest stays on.
#[test]
#[ignore = "run as nobody by an_unprivileged_user_short_of_locked_memory_has_smaller_rings_not_none"]
fn recorded_as_nobody_with_no_memlock() {
    let budget = perf_lock_budget();
    let page = 4096;
    let full = budget / (pinlearn_engine::live::FAULT_RING_BYTES + page);
    let threads = budget / (16 * 1024 + page) + 8;
    let sleepers = Sleepers::start(threads);
    let mut target = watched(&sleepers.tids, true);
    let mut samples = Vec::new();
    target.observe(&mut samples).unwrap();
    assert_eq!(samples.len(), threads);
    let recorded = perf_events_open();
    assert!(
        recorded > full && recorded < threads,
        "{recorded} of {threads} threads recorded; {full} full-size rings fit"
    );
    let notes = target.take_notes();
    let count = |text: &str| notes.iter().filter(|note| note.contains(text)).count();
    assert_eq!(count("locked memory for perf rings is short"), 1, "{notes:?}");
    assert_eq!(count("cannot record the page faults"), 1, "{notes:?}");
    assert_eq!(count("threads' memory stays"), 0, "not turned off: {notes:?}");
    assert!(target.thread_pages_moved().is_some(), "thread memory still on");
    sleepers.end();
}
