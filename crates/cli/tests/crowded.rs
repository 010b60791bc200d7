//! A crowded machine: pinlearn's manager keeps its periods beside a hundred
//! busy processes per CPU (its own test binary: the load would disturb the
//! timing of tests running beside it).

mod common;

use common::*;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A process group killed as a whole when dropped.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

/// How many processes are in process group `group`.
fn group_members(group: u32) -> usize {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(stat_fields)
        // Field 5 of the line: the process group.
        .filter(|fields| fields.get(2).and_then(|pgrp| pgrp.parse::<u32>().ok()) == Some(group))
        .count()
}

fn children(pid: u32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).map_or(0, |c| c.split_whitespace().count())
}

#[test]
fn periods_come_on_time_beside_a_hundred_busy_processes_per_cpu() {
    // At normal priority the manager waits its turn among every busy
    // process of its CPU: on 2 CPUs it took its first period after 18 s
    // (attached for 3 s), and 14 of 86 periods when its program started them.
    // (available_parallelism counts the CPUs this process may use.)
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let loops = (100 * cpus).min(1000);
    let script = format!(
        "i=0; while [ $i -lt {loops} ]; do timeout --foreground 20 sh -c 'while :; do :; done' & i=$((i+1)); done; wait"
    );
    let busy = Group(
        Command::new("sh")
            .args(["-c", &script])
            .process_group(0)
            .stdin(Stdio::null())
            .spawn()
            .expect("start the busy processes"),
    );
    let pid = busy.0.id();
    // Attached once every loop runs: periods in the steady crowd, not while
    // hundreds of processes start (reading the /proc files of a process
    // still starting can wait in the kernel, at any priority:
    // docs/reliability.md).
    wait_until(Duration::from_secs(15), || children(pid) >= loops);
    std::thread::sleep(Duration::from_millis(300));
    let out = pinlearn()
        .args([
            "attach",
            "--json",
            "-",
            "--policy",
            "os",
            "--duration",
            "3s",
            &pid.to_string(),
        ])
        .stdin(Stdio::null())
        .output()
        .expect("attach");
    // Nothing left running: the loops are in the group (`timeout
    // --foreground` does not start one of its own), and all get SIGKILL.
    drop(busy);
    wait_until(Duration::from_secs(5), || group_members(pid) == 0);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON summary");
    if summary["manager_realtime"] != true {
        skip(&format!("real-time priority refused here: {}", summary["notes"]));
        return;
    }
    let periods = summary["periods"].as_u64().unwrap();
    let missed = summary["missed_periods"].as_u64().unwrap();
    let wall = summary["wall_s"].as_f64().unwrap();
    let asked = (wall / 0.05) as u64;
    assert!(summary["threads_seen"].as_u64().unwrap() as usize > loops, "{summary}");
    assert!(
        periods * 10 >= asked * 8 && missed * 10 <= asked,
        "{periods} periods ({missed} missed) in {wall:.1} s, {asked} asked, beside {loops} busy processes"
    );
}
