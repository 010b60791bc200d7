//! Nothing left behind: the background load and the workload that `demo`
//! starts end with it, however it ends (SIGKILL, SIGTERM, Ctrl-C); a
//! manager killed with SIGKILL has its masks restored by its watchdog, or
//! by `pinlearn restore PID` when the watchdog is gone too.

mod common;

use common::{pinlearn, ready_within, running, wait_until};
use std::process::Stdio;
use std::time::Duration;

/// Every process started by a thread of `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|text| {
            text.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

fn command_line(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
        .unwrap_or_default()
}

#[test]
fn the_demo_load_and_workload_end_with_the_demo_on_every_signal() {
    for signal in [libc::SIGKILL, libc::SIGTERM, libc::SIGINT] {
        let mut command = pinlearn();
        command
            .args(["demo", "--repeat", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // As started from a terminal: a test run started as a background job
        // of a shell without job control inherits SIGINT ignored, and so
        // would the demo.
        // SAFETY: only signal(2), async-signal-safe, between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt;
            command.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut demo = command.spawn().expect("start the demo");
        let demo_pid = demo.id();
        // Wait until both helpers run: the load and the first workload.
        let mut helpers = Vec::new();
        wait_until(Duration::from_secs(20), || {
            helpers = children_of(demo_pid);
            let lines: Vec<String> = helpers.iter().map(|&p| command_line(p)).collect();
            lines.iter().any(|l| l.contains(" load ")) && lines.iter().any(|l| l.contains(" work "))
        });
        // SAFETY: kill(2) on our own child, not reaped yet.
        assert_eq!(unsafe { libc::kill(demo_pid as libc::pid_t, signal) }, 0);
        let status = demo.wait().expect("wait for the demo");
        assert!(!status.success(), "signal {signal}: {status:?}");
        for &helper in &helpers {
            let what = command_line(helper);
            assert!(
                ends_within(helper, Duration::from_secs(10)),
                "signal {signal}: {what} (PID {helper}) outlived the demo"
            );
        }
    }
}

/// A light target and `pinlearn attach --policy static` on it, once the
/// manager has moved a thread: (target, its masks before, manager).
fn attached_and_pinned() -> (
    common::Guard,
    std::collections::BTreeMap<u32, String>,
    std::process::Child,
) {
    let target = common::light_target(&common::allowed_cpus(), 3);
    let pid = target.0.id();
    let before = common::masks(pid);
    let manager = pinlearn()
        .args([
            "attach",
            "--interval",
            "20ms",
            "--policy",
            "static",
            "--quiet",
            &pid.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("attach");
    wait_until(Duration::from_secs(10), || common::masks(pid) != before);
    (target, before, manager)
}

fn sigkill(pid: u32) {
    // SAFETY: kill(2); the process may already be gone.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
}

#[test]
fn the_watchdog_restores_every_mask_when_the_manager_is_killed() {
    let (target, before, mut manager) = attached_and_pinned();
    let pid = target.0.id();
    let journal = pinlearn_engine::live::journal_path(pid);
    assert!(journal.exists(), "the journal is written before the first change");
    sigkill(manager.id());
    manager.wait().expect("reap the manager");
    wait_until(Duration::from_secs(10), || common::masks(pid) == before);
    wait_until(Duration::from_secs(5), || !journal.exists());
    // The status the killed manager kept goes too.
    let status = pinlearn_engine::status::status_path(pid);
    wait_until(Duration::from_secs(5), || !status.exists());
}

#[test]
fn restore_puts_back_what_a_killed_manager_and_watchdog_left() {
    let (target, before, mut manager) = attached_and_pinned();
    let pid = target.0.id();
    let watchdog = children_of(manager.id())
        .into_iter()
        .find(|&child| command_line(child).contains(" watchdog "))
        .expect("attach starts a watchdog");
    sigkill(watchdog);
    sigkill(manager.id());
    manager.wait().expect("reap the manager");
    std::thread::sleep(Duration::from_millis(300));
    assert_ne!(common::masks(pid), before, "nobody restored: the case `restore` is for");

    let status = pinlearn_engine::status::status_path(pid);
    assert!(status.exists(), "a killed manager leaves its status");
    let out = common::run(&["restore", &pid.to_string()]);
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert_eq!(common::masks(pid), before);
    assert!(!status.exists(), "restore removes the status a killed manager left");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("threads of PID {pid}")), "{text}");

    // Nothing left to restore: bad input, exit 2, one line saying why.
    let again = common::run(&["restore", &pid.to_string()]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        common::stderr(&again).contains("nothing to restore"),
        "{}",
        common::stderr(&again)
    );
}

#[test]
fn a_second_manager_on_the_same_process_is_refused() {
    let (target, before, mut manager) = attached_and_pinned();
    let pid = target.0.id();
    let out = common::run(&["attach", "--duration", "1s", &pid.to_string()]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    assert!(
        common::stderr(&out).contains("already managed by pinlearn"),
        "{}",
        common::stderr(&out)
    );
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(manager.id() as libc::pid_t, libc::SIGTERM) };
    manager.wait().expect("reap the manager");
    assert_eq!(common::masks(pid), before);
}

/// Whether `pid` is gone (or a zombie) within `timeout`.
fn ends_within(pid: u32, timeout: Duration) -> bool {
    ready_within(timeout, || !running(pid))
}

/// Every descendant of `pid`, children first.
fn descendants_of(pid: u32) -> Vec<u32> {
    let mut found = children_of(pid);
    let mut next = 0;
    while next < found.len() {
        let more = children_of(found[next]);
        found.extend(more);
        next += 1;
    }
    found
}

#[test]
fn run_s_program_ends_with_pinlearn_when_asked_killed_or_not() {
    for (flag, signal) in [(true, libc::SIGKILL), (true, libc::SIGTERM), (false, libc::SIGKILL)] {
        let mut args = vec!["run", "--policy", "os", "--quiet"];
        if flag {
            args.push("--end-with-pinlearn");
        }
        args.extend(["--", "sleep", "60"]);
        let mut manager = pinlearn()
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run");
        let mut program = Vec::new();
        wait_until(Duration::from_secs(10), || {
            program = children_of(manager.id())
                .into_iter()
                .filter(|&p| command_line(p).starts_with("sleep"))
                .collect();
            !program.is_empty()
        });
        let [sleep] = program[..] else {
            panic!("one sleep under pinlearn run: {program:?}");
        };
        // SAFETY: kill(2) on our own child, not reaped yet.
        assert_eq!(unsafe { libc::kill(manager.id() as libc::pid_t, signal) }, 0);
        manager.wait().expect("reap pinlearn");
        if flag {
            assert!(
                ends_within(sleep, Duration::from_secs(5)),
                "signal {signal}: the program outlived pinlearn run --end-with-pinlearn"
            );
        } else {
            std::thread::sleep(Duration::from_secs(1));
            assert!(running(sleep), "signal {signal}: without the flag the program runs on");
            sigkill(sleep);
        }
    }
}

#[test]
fn a_bench_killed_mid_run_leaves_no_workload_running() {
    // The program of a managed run is a grandchild: `pinlearn bench` ─►
    // `pinlearn run` ─► the program. It used to run on, unpinned, once the
    // bench was stopped by SIGTERM. The program here takes 1 s the first
    // time (the bench's calibration run) and 60 s after (the managed run).
    let dir = tempfile::tempdir().expect("temporary directory");
    let marker = dir.path().join("calibrated");
    let command = format!(
        "sh -c 'if [ -e {0} ]; then exec sleep 60; else touch {0}; exec sleep 1; fi'",
        marker.display()
    );
    let mut bench = pinlearn()
        .args([
            "bench",
            "--command",
            &command,
            "--scenarios",
            "C.1",
            "--schedulers",
            "learn",
            "--repeat",
            "1",
            "--quiet",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("bench");
    let mut program = Vec::new();
    wait_until(Duration::from_secs(30), || {
        program = descendants_of(bench.id())
            .into_iter()
            .filter(|&p| command_line(p).starts_with("sleep 60"))
            .collect();
        !program.is_empty()
    });
    // SAFETY: kill(2) on our own child, not reaped yet.
    assert_eq!(unsafe { libc::kill(bench.id() as libc::pid_t, libc::SIGTERM) }, 0);
    bench.wait().expect("reap the bench");
    for &pid in &program {
        if !ends_within(pid, Duration::from_secs(5)) {
            sigkill(pid);
            panic!("the managed run's program (PID {pid}) outlived the bench");
        }
    }
}
