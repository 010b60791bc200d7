//! What recording a thread's page faults (`move_thread_memory`) costs it,
//! and what moving its pages costs pinlearn: a thread first-touches a
//! fresh mapping of `MIB` MiB, with and without its faults recorded (a
//! drain every 50 ms, as pinlearn's periods do), in interleaved pairs;
//! then every recorded page goes through move_pages(2) to node 0 (where
//! the pages are already: the walk and the call, not a cross-node copy).
//!
//! cargo run --release -p pinlearn-engine --example fault_sampling_cost [MIB] [PAIRS]

use pinlearn_engine::live::{FAULT_RING_BYTES, FaultPages, current_tid, move_pages_to};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn touch_fresh(bytes: usize) -> Duration {
    // SAFETY: an anonymous private mapping, written inside its length, unmapped after.
    unsafe {
        let start = libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(start, libc::MAP_FAILED, "mmap");
        let began = Instant::now();
        for offset in (0..bytes).step_by(4096) {
            std::ptr::write_volatile((start as *mut u8).add(offset), 1);
        }
        let took = began.elapsed();
        libc::munmap(start, bytes);
        took
    }
}

/// One run: the time the thread took to touch `bytes`, and, recorded, the
/// pages recorded, the faults missed and the seconds move_pages took.
fn run(bytes: usize, recorded: bool) -> (f64, Option<(usize, u64, f64)>) {
    let faults: Arc<Mutex<Option<FaultPages>>> = Arc::new(Mutex::new(None));
    let ready = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let worker = {
        let (faults, ready, done) = (faults.clone(), ready.clone(), done.clone());
        std::thread::spawn(move || {
            if recorded {
                *faults.lock().unwrap() =
                    Some(FaultPages::open(current_tid(), FAULT_RING_BYTES).expect("page-fault event"));
            }
            ready.store(true, Ordering::SeqCst);
            let took = touch_fresh(bytes);
            done.store(true, Ordering::SeqCst);
            took
        })
    };
    while !ready.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    while !done.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
        if let Some(f) = faults.lock().unwrap().as_mut() {
            f.drain();
        }
    }
    let took = worker.join().unwrap().as_secs_f64();
    let moved = faults.lock().unwrap().take().map(|mut f| {
        let addresses = f.addresses();
        let began = Instant::now();
        // The mapping is gone: the call walks and reports every page unmapped.
        let _ = move_pages_to(std::process::id(), &addresses, 0);
        (addresses.len(), f.missed, began.elapsed().as_secs_f64())
    });
    (took, moved)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mib: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(256);
    let pairs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let bytes = mib << 20;
    let mut ratios = Vec::new();
    println!("pair  plain_s  recorded_s  ratio  pages  missed  move_pages_s");
    for pair in 0..pairs {
        // Interleaved, the order alternating.
        let (plain, (recorded, moved)) = if pair % 2 == 0 {
            let plain = run(bytes, false).0;
            (plain, run(bytes, true))
        } else {
            let recorded = run(bytes, true);
            (run(bytes, false).0, recorded)
        };
        let (pages, missed, move_s) = moved.expect("recorded");
        ratios.push(recorded / plain);
        println!(
            "{pair:>4}  {plain:>7.4}  {recorded:>10.4}  {:>5.3}  {pages:>5}  {missed:>6}  {move_s:>12.4}",
            recorded / plain
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "ratio recorded/plain: median {:.3}, min {:.3}, max {:.3} ({pairs} pairs, {mib} MiB each)",
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1]
    );
}
