//! The waiting/working classifier on samples recorded from a known program:
//! an unmodified OpenMP stencil (tests/programs/omp_stencil.c, gcc
//! -fopenmp, libgomp's default wait policy, 2 threads), once alone and once
//! beside a program in another session holding the first CPU. Each fixture
//! is the process's /proc/PID/maps and the instruction pointers of its
//! threads' CPU-clock samples over one second (tests/fixtures/NAME.maps,
//! NAME.ips).
//!
//! Re-record (needs gcc and 2 CPUs; overwrites the fixtures):
//! `cargo test --release -p pinlearn-engine --test waiting -- --ignored record`

use pinlearn_engine::live::{CodeKind, CpuSamples, Isa, WaitingCode, WaitingRules};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// (waiting, work, unmapped) sample counts of a recorded fixture, libraries
/// matched by name (the recorded machine's libc is not at hand).
fn classify(name: &str) -> (usize, usize, usize) {
    let maps = std::fs::read(fixture(&format!("{name}.maps"))).unwrap();
    let ips = std::fs::read_to_string(fixture(&format!("{name}.ips"))).unwrap();
    let rules = WaitingRules::default().compile().unwrap();
    let code = WaitingCode::build(&maps, &rules, &mut |_| None).unwrap();
    let mut counts = (0, 0, 0);
    for line in ips.lines() {
        let ip = u64::from_str_radix(line.trim(), 16).unwrap();
        match code.classify(ip) {
            CodeKind::Waiting => counts.0 += 1,
            CodeKind::Work => counts.1 += 1,
            CodeKind::Unmapped => counts.2 += 1,
        }
    }
    counts
}

#[test]
fn beside_another_job_most_samples_are_waiting() {
    let (waiting, work, unmapped) = classify("omp_stencil_beside_hog");
    let all = (waiting + work + unmapped) as f64;
    assert!(all >= 500.0, "a second of two threads at 1 kHz: {all} samples");
    assert_eq!(unmapped, 0, "every sample falls in the program's code or a library");
    let share = waiting as f64 / all;
    // Recorded: 720 of 940 samples (0.77) in libgomp, the threads spinning
    // at the barrier while one of them shares a CPU with the other job.
    assert!(share > 0.6, "waiting share {share:.2}");
}

#[test]
fn alone_most_samples_are_work() {
    let (waiting, work, unmapped) = classify("omp_stencil_alone");
    let all = (waiting + work + unmapped) as f64;
    assert!(all >= 500.0, "{all} samples");
    assert_eq!(unmapped, 0);
    let share = waiting as f64 / all;
    // Recorded: 563 of 1969 samples (0.29) in libgomp: a sweep of 512x512
    // takes about 0.2 ms on two threads, so forking, joining and the
    // barrier's imbalance are a fair share of it even alone.
    assert!(share < 0.4, "waiting share {share:.2}");
}

/// Samples one thread of this process for 0.6 s while it runs `body`, and
/// returns the share of its samples classified waiting and how many
/// addresses were found in spin loops.
fn waiting_share_of(rules: &WaitingRules, body: fn(&AtomicBool) -> u64) -> (f64, usize) {
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let worker = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            tid_tx.send(nix::unistd::gettid().as_raw() as u32).unwrap();
            body(&stop)
        })
    };
    let tid = tid_rx.recv().unwrap();
    let mut samples = CpuSamples::open(tid, 1_000_000, 1 << 16).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(600));
    // Maps read after the thread started: its stack and code are mapped.
    let maps = std::fs::read("/proc/self/maps").unwrap();
    let mut code = WaitingCode::build(&maps, &rules.compile().unwrap(), &mut |_| None).unwrap();
    let mut scratch = Vec::new();
    samples.take(&mut code, std::process::id(), &mut scratch);
    stop.store(true, Ordering::Relaxed);
    std::hint::black_box(worker.join().unwrap());
    let work = samples.work_share().expect("the thread ran and was sampled");
    (1.0 - work, code.spin_loops_found())
}

/// Waits on a flag as a hand-written barrier does: no library, no named
/// function, only `spin_loop` (PAUSE on x86-64, ISB or YIELD on AArch64).
#[inline(never)]
fn spin_on(stop: &AtomicBool) -> u64 {
    let mut rounds = 0u64;
    while !stop.load(Ordering::Acquire) {
        std::hint::spin_loop();
        rounds += 1;
    }
    rounds
}

/// A loop of arithmetic that checks the same flag: work.
#[inline(never)]
fn compute_until(stop: &AtomicBool) -> u64 {
    let mut x = 1u64;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..1000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        }
    }
    x
}

#[test]
fn a_spin_loop_in_the_programs_own_code_is_waiting() {
    if Isa::native().is_none() {
        eprintln!("skipped: spin loops are recognised on x86-64 and AArch64 only");
        return;
    }
    if cfg!(debug_assertions) {
        // Unoptimised, the flag's load and the hint are calls into core, so
        // the samples fall in those functions, not in a loop around the hint.
        eprintln!("skipped: needs an optimised build (cargo test --release, as the README's test command)");
        return;
    }
    let rules = WaitingRules::default();
    let (spinning, found) = waiting_share_of(&rules, spin_on);
    assert!(
        spinning > 0.9,
        "a thread spinning on a flag: waiting share {spinning:.2}"
    );
    assert!(found >= 1, "its loop was found");
    let (computing, found) = waiting_share_of(&rules, compute_until);
    assert!(computing < 0.1, "a computing thread: waiting share {computing:.2}");
    assert_eq!(found, 0);
    // Turned off, the spinning thread's own code is work.
    let off = WaitingRules {
        spin_loops: false,
        ..WaitingRules::default()
    };
    let (spinning, _) = waiting_share_of(&off, spin_on);
    assert!(spinning < 0.1, "spin loops not looked for: waiting share {spinning:.2}");
}

/// Records the fixtures (see the module doc).
#[test]
#[ignore = "records fixtures: needs gcc and 2 CPUs"]
fn record() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("omp_stencil");
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/programs/omp_stencil.c");
    let status = Command::new("gcc")
        .args(["-O2", "-fopenmp", "-o"])
        .arg(&exe)
        .arg(&source)
        .status()
        .unwrap();
    assert!(status.success());
    for (name, hog) in [("omp_stencil_alone", false), ("omp_stencil_beside_hog", true)] {
        let mut hog = hog.then(|| {
            Command::new("setsid")
                .args(["taskset", "-c", "0", "sh", "-c", "while :; do :; done"])
                .spawn()
                .unwrap()
        });
        let mut program = Command::new(&exe)
            .args(["512", "100000"])
            .env("OMP_NUM_THREADS", "2")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let pid = program.id();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let maps = std::fs::read(format!("/proc/{pid}/maps")).unwrap();
        let mut samplers: Vec<CpuSamples> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_str().unwrap().parse::<u32>().unwrap())
            .map(|tid| CpuSamples::open(tid, 1_000_000, 1 << 16).unwrap())
            .collect();
        std::thread::sleep(std::time::Duration::from_secs(1));
        let mut ips = Vec::new();
        for sampler in &mut samplers {
            sampler.drain(&mut ips);
        }
        program.kill().unwrap();
        program.wait().unwrap();
        if let Some(hog) = hog.as_mut() {
            // setsid execs the shell in place: the child is the hog itself.
            hog.kill().unwrap();
            hog.wait().unwrap();
        }
        std::fs::write(fixture(&format!("{name}.maps")), maps).unwrap();
        let text: String = ips.iter().map(|ip| format!("{ip:x}\n")).collect();
        std::fs::write(fixture(&format!("{name}.ips")), text).unwrap();
    }
}
