//! `--metric heartbeat` from the engine's side: two threads burn the same CPU
//! but report progress at rates 10:1; the heartbeat speeds show that ratio,
//! which run shares could not.

use pinlearn_engine::Metric;
use pinlearn_engine::Target;
use pinlearn_engine::live::{LiveProcess, Scope, get_affinity};
use pinlearn_policy::ThreadSample;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn worker(stop: Arc<AtomicBool>, beats_per_round: u64, tids: Arc<Mutex<HashSet<u32>>>) -> std::thread::JoinHandle<u32> {
    std::thread::spawn(move || {
        let tid = nix::unistd::gettid().as_raw() as u32;
        tids.lock().unwrap().insert(tid);
        while !stop.load(Ordering::Relaxed) {
            let round = Instant::now();
            while round.elapsed() < Duration::from_micros(500) {
                std::hint::spin_loop();
            }
            pinlearn_heartbeat::beat(beats_per_round);
        }
        tid
    })
}

#[test]
fn heartbeat_speeds_follow_reported_progress_not_cpu_time() {
    let stop = Arc::new(AtomicBool::new(false));
    let tids = Arc::new(Mutex::new(HashSet::new()));
    let fast = worker(stop.clone(), 10, tids.clone());
    let slow = worker(stop.clone(), 1, tids.clone());
    while tids.lock().unwrap().len() < 2 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let cpus = vec![get_affinity(0).unwrap()];
    let scope = Scope {
        only: Some(tids.clone()),
        ..Scope::process_tree(std::process::id(), false)
    };
    let mut target = LiveProcess::new(scope, Metric::Heartbeat, cpus, 0.1);
    let mut samples: Vec<ThreadSample> = Vec::new();
    let mut speeds = Vec::new();
    for _ in 0..6 {
        samples.clear();
        target.observe(&mut samples).unwrap();
        speeds.push(samples.clone());
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    let (fast_tid, slow_tid) = (fast.join().unwrap(), slow.join().unwrap());
    let last = speeds.last().unwrap();
    let speed_of = |tid: u32| {
        last.iter()
            .find(|s| s.key as u32 == tid)
            .and_then(|s| s.speed)
            .expect("a speed")
    };
    let (f, s) = (speed_of(fast_tid), speed_of(slow_tid));
    assert!(f > 0.0 && f <= 1.0, "fast {f}");
    assert!(s < 0.3 * f, "slow {s} against fast {f}: the rates are 1:10");
}
