//! What reading where a thread's memory is costs pinlearn each period
//! (`Target::remote`, on machines with two memory nodes or more): for each
//! of `THREADS` threads that first-touched 4 MiB while their page faults
//! were recorded, the nodes of 16 of its pages (one move_pages(2) query
//! that moves nothing) and the CPU it ran on last (`/proc/self/task/TID/stat`),
//! `PERIODS` times; prints the mean cost per thread per period and what it
//! makes of one core at 10 and 20 periods a second were every thread read
//! every period (the live target reads each thread every 4th period,
//! `REMOTE_EVERY`: a quarter of that). Results: docs/simulator.md, "Ties go
//! to the threads nearer their memory".
//!
//! cargo run --release -p pinlearn-engine --example remote_share_cost [THREADS] [PERIODS]

use pinlearn_engine::live::{FAULT_RING_BYTES, FaultPages, current_tid, nodes_of};
use std::sync::{Arc, Barrier};
use std::time::Instant;

const BYTES: usize = 4 << 20;

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().map_or(64, |a| a.parse().expect("THREADS: a number"));
    let periods: usize = args.next().map_or(200, |a| a.parse().expect("PERIODS: a number"));
    let done = Arc::new(Barrier::new(threads + 1));
    let release = Arc::new(Barrier::new(threads + 1));
    let (tx, rx) = std::sync::mpsc::channel();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (done, release, tx) = (done.clone(), release.clone(), tx.clone());
            std::thread::spawn(move || {
                let tid = current_tid();
                let mut faults = FaultPages::open(tid, FAULT_RING_BYTES).expect("page-fault event");
                let buffer = vec![1u8; BYTES];
                std::hint::black_box(&buffer);
                faults.set_open(false).expect("close");
                tx.send((tid, faults)).expect("send");
                done.wait();
                release.wait();
                drop(buffer);
            })
        })
        .collect();
    drop(tx);
    done.wait();
    let mut recorded: Vec<(u32, FaultPages)> = rx.iter().take(threads).collect();
    let pid = std::process::id();
    let began = Instant::now();
    let mut known = 0usize;
    for _ in 0..periods {
        for (tid, faults) in &mut recorded {
            let addresses = faults.spread(16);
            let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).expect("stat");
            std::hint::black_box(stat);
            known += nodes_of(pid, &addresses)
                .expect("move_pages query")
                .iter()
                .flatten()
                .count();
        }
    }
    let per_thread_us = began.elapsed().as_secs_f64() * 1e6 / (periods * threads) as f64;
    release.wait();
    for worker in workers {
        worker.join().unwrap();
    }
    println!(
        "{threads} threads x {periods} periods: {per_thread_us:.1} us per thread per period ({:.1} pages found of 16); \
         one core's share at 10 periods/s: {:.2}%, at 20: {:.2}%",
        known as f64 / (periods * threads) as f64,
        per_thread_us * threads as f64 * 10.0 / 1e4,
        per_thread_us * threads as f64 * 20.0 / 1e4,
    );
}
