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
    // Runs the stencil on the two CPUs with `sweeps` sweeps and `extra` in
    // its environment; its wall time, or `None` once it ran `cap` seconds
    // (it is killed then).
    let stencil_run = |sweeps: u64, extra: &[(&str, String)], cap: f64| -> Option<f64> {
        let mut command = Command::new("taskset");
        command
            .args(["-c", &pair])
            .arg(&stencil)
            .args(["512", &sweeps.to_string()])
            .env("OMP_NUM_THREADS", "2")
            .stdout(Stdio::null());
        for (name, value) in extra {
            command.env(name, value);
        }
        let started = Instant::now();
        let mut child = command.spawn().expect("taskset");
        loop {
            if let Some(status) = child.try_wait().expect("wait for the stencil") {
                assert!(status.success(), "the stencil failed: {status}");
                return Some(started.elapsed().as_secs_f64());
            }
            if started.elapsed().as_secs_f64() > cap {
                child.kill().expect("kill the stencil");
                child.wait().expect("reap the stencil");
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    let pinned = [
        ("OMP_PLACES", format!("{{{loaded}}},{{{free}}}")),
        ("OMP_PROC_BIND", "close".to_string()),
    ];
    // The work is sized to the machine: the best fixed pin (one thread per
    // CPU) takes about 2.5 s, so the learner's fixed cost of finding it
    // (0.3-0.7 s measured) does not decide the outcome on a fast machine.
    let probe_sweeps = 1000;
    let probe_s = stencil_run(probe_sweeps, &pinned, 60.0).expect("1000 sweeps within a minute");
    let sweeps = ((probe_sweeps as f64 * 2.5 / probe_s) as u64).clamp(probe_sweeps, 100 * probe_sweeps);
    // The best fixed pin, then Linux alone on the two CPUs (stopped after
    // five times the fixed pin's time: only whether it was far behind
    // matters), then the same program under pinlearn.
    let hog_before = cpu_seconds(hog.0.id());
    let wall = Instant::now();
    let pinned_s = stencil_run(sweeps, &pinned, 60.0).expect("the fixed pin within a minute");
    let linux_cap = 5.0 * pinned_s;
    let linux_s = stencil_run(sweeps, &[], linux_cap);
    let hog_share = (cpu_seconds(hog.0.id()) - hog_before) / wall.elapsed().as_secs_f64();
    let linux_shown = match linux_s {
        Some(s) => format!("{s:.2} s"),
        None => format!("stopped after {linux_cap:.2} s"),
    };
    let linux_s = linux_s.unwrap_or(linux_cap);

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
        .args(["512", &sweeps.to_string()])
        .env("OMP_NUM_THREADS", "2")
        .output()
        .expect("pinlearn run");
    let learn_s = started.elapsed().as_secs_f64();
    assert!(out.status.success(), "{}", stderr(&out));
    eprintln!(
        "{sweeps} sweeps: fixed pin {pinned_s:.2} s, linux {linux_shown}, pinlearn run {learn_s:.2} s; the hog used {:.0}% of its CPU",
        hog_share * 100.0
    );
    assert!(
        hog_share > 0.25,
        "the hog got {:.0}% of its CPU: the test's premise is gone",
        hog_share * 100.0
    );
    // Measured here (2.5 s of fixed pin): Linux stopped after 12.5 s,
    // pinlearn 2.95-3.2 s. A CI machine where the hog got 66% of its CPU let
    // Linux take only 2.2 times the fixed pin's time (0.74 s and 1.64 s
    // with a fixed 5000 sweeps; pinlearn 1.06 s). Where Linux is far behind,
    // pinlearn must win back at least half of what Linux lost; where Linux
    // placed well, pinlearn must not be much worse than Linux, and the
    // placement checks below do not apply.
    let linux_was_wrong = linux_s > 2.0 * pinned_s;
    if linux_was_wrong {
        assert!(
            learn_s < pinned_s + 0.5 * (linux_s - pinned_s),
            "pinlearn run took {learn_s:.2} s, Linux {linux_shown}, the fixed pin {pinned_s:.2} s"
        );
    } else {
        assert!(
            learn_s < 1.25 * linux_s,
            "Linux placed well ({linux_shown}, fixed pin {pinned_s:.2} s) and pinlearn run took {learn_s:.2} s"
        );
    }

    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(summary["metric"], "useful", "auto picks the sampled metric here");
    for thread in summary["threads"].as_array().unwrap() {
        assert_eq!(thread["source"], "useful", "{thread}");
        assert!(thread["waiting_share"].as_f64().is_some(), "{thread}");
    }
    // The hog ran beside it (a quarter of its CPU at least, above): the
    // summary says what share of the two CPUs other programs had.
    let others = summary["others_share"]
        .as_f64()
        .expect("the other programs' share told");
    assert!(
        (0.08..0.75).contains(&others),
        "other programs' share of the two CPUs: {others}"
    );

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
