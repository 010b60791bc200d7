//! The engine as a library inside the application: the manager runs on a
//! thread of its own, supervises only the threads that register, and puts
//! every mask back when stopped.

use pinlearn_engine::live::get_affinity;
use pinlearn_engine::{Manager, PolicyChoice, Registration, Request, Settings};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant};

#[test]
fn registered_threads_are_supervised_and_restored() {
    let settings = Settings {
        interval: Duration::from_millis(10),
        policy: PolicyChoice::Static,
        // Periods at their 10 ms: with the sampled metric, steps at this
        // pace cost more than the default budget (1% of the CPUs) on a
        // loaded machine, which stretched them (7 periods in 310 ms beside
        // four busy loops, the longest 69 ms).
        manager_budget: 1.0,
        ..Settings::default()
    };
    let request = Request {
        settings,
        cpus: None,
        trace: None,
        bubbles: None,
        watchdog: None,
    };
    let manager = Manager::start(&request, Registration::Explicit).expect("start");
    let stop = Arc::new(AtomicBool::new(false));
    let registered = Arc::new(Barrier::new(4));
    let stopped = Arc::new(Barrier::new(4));
    let checked = Arc::new(Barrier::new(4));
    let (tid_tx, tid_rx) = mpsc::channel();
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let (registrar, stop) = (manager.registrar().clone(), stop.clone());
            let (registered, stopped, checked) = (registered.clone(), stopped.clone(), checked.clone());
            let tid_tx = tid_tx.clone();
            std::thread::spawn(move || {
                let before = get_affinity(0).unwrap();
                tid_tx.send(nix::unistd::gettid().as_raw() as u32).unwrap();
                registrar.register_current_thread();
                registered.wait();
                let mut x = 1u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
                let during = get_affinity(0).unwrap();
                stopped.wait();
                checked.wait();
                (before, during, get_affinity(0).unwrap())
            })
        })
        .collect();
    // An unregistered thread of the same process is left alone.
    let bystander_mask = get_affinity(0).unwrap();
    registered.wait();
    // Wait for the pins themselves, then for 30 more periods: how soon the
    // manager's first step comes depends on the machine's load.
    let tids: Vec<u32> = tid_rx.iter().take(3).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !tids
        .iter()
        .all(|&tid| get_affinity(tid).is_ok_and(|mask| mask.len() == 1))
    {
        assert!(Instant::now() < deadline, "the workers were not pinned within 30 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    stopped.wait();
    let summary = manager.stop().expect("stop");
    checked.wait();
    let masks: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    assert_eq!(
        summary.threads_seen, 3,
        "only the registered threads: {:?}",
        summary.threads
    );
    assert_eq!(summary.ended_by, "stopped");
    assert!(summary.periods >= 10, "{} periods of 10 ms in 300 ms", summary.periods);
    let allowed = get_affinity(0).unwrap();
    for (before, during, after) in masks {
        assert_eq!(during.len(), 1, "static pins each worker to one core, got {during}");
        assert!(during.is_subset(&allowed));
        assert_eq!(after, before, "the mask is back after stop");
    }
    assert_eq!(get_affinity(0).unwrap(), bystander_mask);
}
