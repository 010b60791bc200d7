//! Helpers shared by the end-to-end tests: run the real `pinlearn` binary,
//! start target processes, read thread masks from /proc.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn pinlearn() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pinlearn"))
}

pub fn run(args: &[&str]) -> Output {
    pinlearn()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run pinlearn")
}

/// Runs `pinlearn SUBCOMMAND --json FILE REST...` and returns its output
/// with the JSON summary written to FILE in place of stdout (the supervised
/// program's own stdout is dropped).
pub fn run_json(args: &[&str]) -> Output {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("summary.json");
    let file_text = file.to_str().expect("utf-8 path").to_string();
    let mut full: Vec<&str> = vec![args[0], "--json", &file_text];
    full.extend_from_slice(&args[1..]);
    let mut out = run(&full);
    out.stdout = std::fs::read(&file).unwrap_or_default();
    out
}

/// Every thread's allowed CPU list, by tid, from /proc/PID/task/*/status.
pub fn masks(pid: u32) -> BTreeMap<u32, String> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for entry in entries.flatten() {
        let tid: u32 = entry.file_name().to_string_lossy().parse().expect("tid");
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        if let Some(line) = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")) {
            out.insert(tid, line["Cpus_allowed_list:".len()..].trim().to_string());
        }
    }
    out
}

/// A child process killed when dropped.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A multi-threaded target: `pinlearn load` with one light spinner per CPU
/// of `cpus` (each pins itself there) plus its main thread.
pub fn light_target(cpus: &str, threads_expected: usize) -> Guard {
    let child = pinlearn()
        .args(["load", "--busy", "5", "--duration", "60s", "--cpus", cpus])
        .stdout(Stdio::null())
        .spawn()
        .expect("start target");
    let pid = child.id();
    let guard = Guard(child);
    wait_until(Duration::from_secs(5), || masks(pid).len() >= threads_expected);
    // Let the spinners pin themselves before anyone records their masks.
    std::thread::sleep(Duration::from_millis(200));
    guard
}

pub fn wait_until(timeout: Duration, ready: impl FnMut() -> bool) {
    assert!(ready_within(timeout, ready), "timed out waiting");
}

/// Whether `ready` holds within `timeout`, asked every 20 ms.
pub fn ready_within(timeout: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !ready() {
        if start.elapsed() >= timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// The CPUs this test process may use, as a list.
pub fn allowed_cpus() -> String {
    masks(std::process::id()).values().next().cloned().expect("own mask")
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `script` with `sh -c` (stdin closed), checks that it exited 0 and
/// reads the JSON summary pinlearn wrote to `summary` (a `--json FILE` in
/// the script).
pub fn sh_then_summary(script: &str, summary: &std::path::Path) -> serde_json::Value {
    let out = Command::new("sh")
        .args(["-c", script])
        .stdin(Stdio::null())
        .output()
        .expect("run sh");
    assert_eq!(out.status.code(), Some(0), "{script}: {}", stderr(&out));
    let text = std::fs::read(summary).unwrap_or_else(|e| panic!("summary {}: {e}", summary.display()));
    serde_json::from_slice(&text).expect("JSON summary")
}

/// Says that a test cannot run here and why. Under CI (`CI` set, as
/// `.ci/run` runs), where everything a test needs is installed, a skip is a
/// failure instead: a test must never pass by not running.
pub fn skip(reason: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("this test cannot run ({reason}), and CI must run every test");
    }
    eprintln!("skipped: {reason}");
}

/// The fields of /proc/PID/stat from field 3 (the state) on: the name in
/// field 2 may hold spaces and parentheses, so they start after its last ')'.
pub fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(
        stat.rsplit_once(") ")?
            .1
            .split_whitespace()
            .map(str::to_string)
            .collect(),
    )
}

/// Alive and not a zombie.
pub fn running(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|fields| fields.first().is_some_and(|state| !matches!(state.as_str(), "Z" | "X")))
}

/// The first two CPUs this test may use (as text); `None` (the test is
/// skipped, and says so) where fewer than 2 CPUs are allowed.
pub fn first_two_cpus() -> Option<[String; 2]> {
    let allowed = pinlearn_topology::CpuSet::parse_list(&allowed_cpus()).expect("own mask");
    if allowed.len() < 2 {
        skip(&format!("needs 2 CPUs, this test may use {allowed}"));
        return None;
    }
    let mut cpus = allowed.iter().map(|c| c.to_string());
    Some([cpus.next()?, cpus.next()?])
}

/// The first two CPUs this test may use, with a program in another session
/// keeping the first one busy; `None` (the test is skipped, and says so)
/// where fewer than 2 CPUs are allowed.
pub fn hog_on_the_first_of_two_cpus() -> Option<(usize, usize, Guard)> {
    let [first, second] = first_two_cpus()?.map(|c| c.parse::<usize>().expect("a CPU number"));
    let hog = pinlearn()
        .args(["load", "--setsid", "--cpus", &first.to_string()])
        .stdout(Stdio::null())
        .spawn()
        .expect("start the hog");
    Some((first, second, Guard(hog)))
}

/// CPU seconds (user and system) process `pid` and all its threads used.
pub fn cpu_seconds(pid: u32) -> f64 {
    let fields = stat_fields(pid).expect("read the process's stat");
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf only reads a constant.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    ticks as f64 / per_second as f64
}
