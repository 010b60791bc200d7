//! Programs nobody changed for pinlearn (no heartbeats, no counters here):
//! an OpenMP program whose threads spin at barriers next to another
//! session's CPU hog gets one thread alone on the free CPU under `pinlearn run` and
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
fn spinning_openmp_threads_get_the_free_cpu_and_beat_linux() {
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let Some(stencil) = build_stencil(dir.path()) else {
        return;
    };
    let Some((loaded, free, hog)) = hog_on_the_first_of_two_cpus() else {
        return;
    };
    let pair = format!("{loaded},{free}");
    let sweeps = "5000";
    let stencil_run = |extra: &[(&str, String)]| {
        let mut command = Command::new("taskset");
        command
            .args(["-c", &pair])
            .arg(&stencil)
            .args(["512", sweeps])
            .env("OMP_NUM_THREADS", "2")
            .stdout(Stdio::null());
        for (name, value) in extra {
            command.env(name, value);
        }
        let started = Instant::now();
        assert!(command.status().expect("taskset").success());
        started.elapsed().as_secs_f64()
    };
    // The best fixed pin (one thread per CPU), Linux alone on the two CPUs,
    // then the same program under pinlearn.
    let hog_before = cpu_seconds(hog.0.id());
    let wall = Instant::now();
    let pinned_s = stencil_run(&[
        ("OMP_PLACES", format!("{{{loaded}}},{{{free}}}")),
        ("OMP_PROC_BIND", "close".to_string()),
    ]);
    let linux_s = stencil_run(&[]);
    let hog_share = (cpu_seconds(hog.0.id()) - hog_before) / wall.elapsed().as_secs_f64();

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
    eprintln!(
        "fixed pin {pinned_s:.2} s, linux {linux_s:.2} s, pinlearn run {learn_s:.2} s; the hog used {:.0}% of its CPU",
        hog_share * 100.0
    );
    assert!(
        hog_share > 0.25,
        "the hog got {:.0}% of its CPU: the test's premise is gone",
        hog_share * 100.0
    );
    // Measured here with 5000 sweeps: fixed pin 3-4 s, Linux 23-37 s,
    // pinlearn 3.2-4.0 s. One CI machine let Linux place the threads well
    // (Linux 2.0 s, pinlearn 1.8 s): there pinlearn must not be worse than
    // Linux, and the placement checks below do not apply.
    let linux_was_wrong = linux_s > 2.0 * pinned_s;
    if linux_was_wrong {
        assert!(
            learn_s < 0.6 * linux_s,
            "pinlearn run took {learn_s:.2} s, Linux {linux_s:.2} s"
        );
    } else {
        assert!(
            learn_s < 1.25 * linux_s,
            "Linux placed well ({linux_s:.2} s, fixed pin {pinned_s:.2} s) and pinlearn run took {learn_s:.2} s"
        );
    }

    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(summary["metric"], "useful", "auto picks the sampled metric here");
    for thread in summary["threads"].as_array().unwrap() {
        assert_eq!(thread["source"], "useful", "{thread}");
        assert!(thread["waiting_share"].as_f64().is_some(), "{thread}");
    }

    // The last second of the trace: in most periods one thread has the
    // free CPU to itself (pinned there, the other not) and the other is on
    // the loaded CPU or left to Linux. (Pinned one per CPU in every run was
    // the aim; the main thread often ends on the "whole machine"
    // action instead, where Linux keeps it off the free CPU: its own speed
    // there is the same, see docs/results.md.)
    let text = std::fs::read_to_string(&trace).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().skip(1).map(|l| l.split(',').collect()).collect();
    let last_period: u64 = rows.iter().map(|r| r[1].parse::<u64>().unwrap()).max().unwrap();
    let (free, loaded) = (free.to_string(), loaded.to_string());
    let mut owned = 0;
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
        let on_free = places.iter().filter(|p| **p == free).count();
        owned += usize::from(on_free == 1);
        split += usize::from(on_free == 1 && places.contains(&loaded.as_str()));
    }
    eprintln!("last {periods} periods: free CPU owned by one thread in {owned}, pinned one per CPU in {split}");
    if !linux_was_wrong {
        return;
    }
    assert!(periods >= 10, "{periods} periods with both threads at the end");
    assert!(
        owned * 2 >= periods,
        "one thread had the free CPU in {owned} of the last {periods} periods"
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

#[test]
fn threads_the_kernel_will_not_sample_are_scored_by_run_share() {
    use std::os::unix::process::CommandExt;
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    if !nix::unistd::Uid::effective().is_root() {
        skip("needs root to run pinlearn as another user");
        return;
    }
    // An unprivileged user may lock perf_event_mlock_kb (516 KiB by
    // default) per CPU of sampling buffers, then RLIMIT_MEMLOCK (made 0
    // here); 8 KiB a thread: 80 threads per CPU are more than that.
    let threads = 80 * std::thread::available_parallelism().map_or(2, |n| n.get());
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let json = dir.path().join("summary.json");
    let pinlearn_exe = env!("CARGO_BIN_EXE_pinlearn");
    let script = format!(
        "ulimit -l 0 && exec {pinlearn_exe} run --metric useful --policy os --json {} -- {pinlearn_exe} work blackscholes --threads {threads} --runs 3000 --quiet",
        json.display()
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .uid(65534)
        .gid(65534)
        .output()
        .expect("run as nobody");
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(err.matches("cannot sample thread").count(), 1, "said once: {err}");
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let sources: Vec<&str> = summary["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["source"].as_str())
        .collect();
    assert!(sources.contains(&"useful"), "{sources:?}");
    assert!(sources.iter().all(|s| *s == "useful" || *s == "cpu"), "{sources:?}");
    // The summary lists the first 64 threads to end; on a busy machine the
    // sampled ones may all end first (seen in a full test run), and the
    // threads scored by run share are then among those counted, not listed.
    let unlisted = summary["ended_not_listed"]["threads"].as_u64().unwrap_or(0);
    assert!(
        sources.contains(&"cpu") || unlisted > 0,
        "no thread scored by run share, and none left unlisted: {sources:?}"
    );
}

#[test]
fn the_papers_workloads_can_report_nothing() {
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let sources = |extra: &[&str]| -> Vec<String> {
        let json = dir.path().join("summary.json");
        let out = pinlearn()
            .args(["run", "--quiet", "--metric", "heartbeat", "--policy", "os", "--json"])
            .arg(&json)
            .args([
                "--",
                env!("CARGO_BIN_EXE_pinlearn"),
                "work",
                "blackscholes",
                "--threads",
                "2",
            ])
            .args(["--runs", "600", "--quiet"])
            .args(extra)
            .stdout(Stdio::null())
            .output()
            .expect("pinlearn run");
        assert!(out.status.success(), "{}", stderr(&out));
        let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        summary["threads"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["source"].as_str().map(String::from))
            .collect()
    };
    let beating = sources(&[]);
    assert!(beating.iter().any(|s| s == "heartbeat"), "{beating:?}");
    let silent = sources(&["--no-heartbeats"]);
    assert!(
        !silent.is_empty() && silent.iter().all(|s| s != "heartbeat"),
        "{silent:?}"
    );
}
