//! Programs nobody changed for pinlearn (no heartbeats, no counters here):
//! an OpenMP program whose threads spin at barriers next to another
//! session's CPU hog is split one thread per CPU by `pinlearn run` and
//! finishes well before Linux does; a pipe-driven program is scored by the
//! bytes it moves (`--metric io`).

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Instant;

/// These tests measure the machine: one at a time.
static MACHINE: Mutex<()> = Mutex::new(());

/// Builds tests/programs/omp_stencil.c of the engine crate with
/// `gcc -fopenmp` into `dir`; `None` (skipped, and said) without gcc.
fn build_stencil(dir: &Path) -> Option<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/programs/omp_stencil.c");
    let exe = dir.join("omp_stencil");
    match Command::new("gcc")
        .args(["-O2", "-fopenmp", "-o"])
        .arg(&exe)
        .arg(&source)
        .status()
    {
        Ok(status) if status.success() => Some(exe),
        Ok(status) => panic!("gcc -fopenmp failed on {}: {status}", source.display()),
        Err(e) => {
            skip(&format!("needs gcc with OpenMP ({e})"));
            None
        }
    }
}

#[test]
fn spinning_openmp_threads_are_split_and_beat_linux() {
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    let allowed = pinlearn_topology::CpuSet::parse_list(&allowed_cpus()).expect("own mask");
    if allowed.len() < 2 {
        skip(&format!("needs 2 CPUs, this test may use {allowed}"));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(stencil) = build_stencil(dir.path()) else {
        return;
    };
    let mut cpus = allowed.iter();
    let (loaded, free) = (cpus.next().unwrap(), cpus.next().unwrap());
    let pair = format!("{loaded},{free}");
    let _hog = Guard(
        pinlearn()
            .args(["load", "--setsid", "--cpus", &loaded.to_string()])
            .stdout(Stdio::null())
            .spawn()
            .expect("start the hog"),
    );
    // Linux alone on the two CPUs, then the same program under pinlearn.
    let sweeps = "3000";
    let started = Instant::now();
    let status = Command::new("taskset")
        .args(["-c", &pair])
        .arg(&stencil)
        .args(["512", sweeps])
        .env("OMP_NUM_THREADS", "2")
        .stdout(Stdio::null())
        .status()
        .expect("taskset");
    assert!(status.success());
    let linux_s = started.elapsed().as_secs_f64();

    let trace = dir.path().join("trace.csv");
    let json = dir.path().join("summary.json");
    let started = Instant::now();
    let out = pinlearn()
        .args(["run", "--quiet", "--cpus", &pair, "--trace"])
        .arg(&trace)
        .arg("--json")
        .arg(&json)
        .arg("--")
        .arg(&stencil)
        .args(["512", sweeps])
        .env("OMP_NUM_THREADS", "2")
        .output()
        .expect("pinlearn run");
    let learn_s = started.elapsed().as_secs_f64();
    assert!(out.status.success(), "{}", stderr(&out));
    eprintln!("linux {linux_s:.2} s, pinlearn run {learn_s:.2} s");
    // Measured here: Linux 13-15 s, pinlearn 3-5 s, a fixed pin 2-2.6 s.
    assert!(
        learn_s < 0.6 * linux_s,
        "pinlearn run took {learn_s:.2} s, Linux {linux_s:.2} s"
    );

    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(summary["metric"], "useful", "auto picks the sampled metric here");
    for thread in summary["threads"].as_array().unwrap() {
        assert_eq!(thread["source"], "useful", "{thread}");
        assert!(thread["waiting_share"].as_f64().is_some(), "{thread}");
    }

    // The last second of the trace: in most periods one thread on each CPU.
    let text = std::fs::read_to_string(&trace).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().skip(1).map(|l| l.split(',').collect()).collect();
    let last_period: u64 = rows.iter().map(|r| r[1].parse::<u64>().unwrap()).max().unwrap();
    let mut split = 0;
    let mut periods = 0;
    for period in last_period.saturating_sub(20)..=last_period {
        let places: Vec<&str> = rows
            .iter()
            .filter(|r| r[1].parse::<u64>().unwrap() == period)
            .map(|r| r[5])
            .collect();
        if places.len() != 2 {
            continue;
        }
        periods += 1;
        let one_each = places.contains(&loaded.to_string().as_str()) && places.contains(&free.to_string().as_str());
        split += usize::from(one_each);
    }
    assert!(periods >= 10, "{periods} periods with both threads at the end");
    assert!(
        split * 3 >= periods * 2,
        "split in {split} of the last {periods} periods"
    );
}

#[test]
fn a_pipe_driven_program_is_scored_by_the_bytes_it_moves() {
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("summary.json");
    let trace = dir.path().join("trace.csv");
    let out = pinlearn()
        .args(["run", "--quiet", "--metric", "io", "--interval", "100ms", "--trace"])
        .arg(&trace)
        .arg("--json")
        .arg(&json)
        .args(["--", "sh", "-c", "head -c 400000000 /dev/zero | gzip -1 | wc -c"])
        .stdout(Stdio::piped())
        .output()
        .expect("pinlearn run");
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(summary["metric"], "io");
    let threads = summary["threads"].as_array().unwrap();
    let gzip = threads
        .iter()
        .find(|t| t["name"] == "gzip")
        .unwrap_or_else(|| panic!("gzip was supervised: {threads:?}"));
    assert_eq!(gzip["source"], "io");
    let speed = gzip["mean_speed"].as_f64().expect("gzip was measured");
    assert!(
        speed > 0.1 && speed <= 1.0,
        "gzip's speed relative to the peak: {speed}"
    );
    // The trace holds gzip's speed in periods while the pipe flowed.
    let text = std::fs::read_to_string(&trace).unwrap();
    let moving = text
        .lines()
        .filter(|l| l.split(',').nth(4) == Some("gzip"))
        .filter(|l| {
            l.split(',')
                .nth(6)
                .and_then(|s| s.parse::<f64>().ok())
                .is_some_and(|s| s > 0.0)
        })
        .count();
    assert!(moving >= 3, "{moving} periods of gzip moving bytes");
}
