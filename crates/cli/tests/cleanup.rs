//! Nothing left behind: the background load and the workload that `demo`
//! starts end with it, however it ends (SIGKILL, SIGTERM, Ctrl-C); a
//! manager killed with SIGKILL has its masks restored by its watchdog, or
//! by `pinlearn restore PID` when the watchdog is gone too.

mod common;

use common::{pinlearn, running, wait_until};
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
            wait_until(Duration::from_secs(10), || !running(helper));
            assert!(
                !running(helper),
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
