//! Nothing left behind: the background load and the workload that `demo`
//! starts end with it, however it ends (SIGKILL, SIGTERM, Ctrl-C).

mod common;

use common::{pinlearn, wait_until};
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

/// Alive and not a zombie.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(") ")?.1.chars().next()?;
            Some(!matches!(state, 'Z' | 'X'))
        })
        .unwrap_or(false)
}

#[test]
fn the_demo_load_and_workload_end_with_the_demo_on_every_signal() {
    for signal in [libc::SIGKILL, libc::SIGTERM, libc::SIGINT] {
        let mut demo = pinlearn()
            .args(["demo", "--repeat", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the demo");
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
