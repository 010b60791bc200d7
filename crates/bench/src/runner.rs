//! One run: the background load, the workload under a scheduler, and what
//! was measured, all through the real `pinlearn` binary so that a run is
//! exactly what a user would type.
//!
//! ```text
//!   BackgroundLoad::start(schedule) ── pinlearn load --cpus LIST [--setsid]  (own session: another
//!        │                         started, stopped (SIGSTOP/SIGCONT) and     user's job, own autogroup)
//!        │                         killed on the scenario's load schedule
//!        ▼
//!   managed:  pinlearn run --end-with-pinlearn --policy P [--objective O] [--metric M] --json SUMMARY [--cpus L] [--trace F]
//!                 [--config F] [--topology S [--topology-map L]] [--bubbles F] [--preload PARTS]
//!                 -- pinlearn work W ARGS --threads N --json - --quiet
//!              (--command: -- CMD ARGS with THREADS_ENV=N; its stdout is dropped)
//!   unmanaged: pinlearn work W ARGS --threads N --json - --quiet (within --cpus), or CMD ARGS
//!              + watch_threads() in a bench thread: pins best-static's threads by name,
//!                or, without pins (calibration), learns the worker threads' names
//!        │ stdout: the workload's JSON (wall_s; a command's is its start-to-exit time);
//!        │ SUMMARY: run's JSON (manager_cpu_s, threads)
//!        │ wait4(): CPU time of the whole process tree
//!        ▼
//!   Measured { wall_s, mean_speed, manager_cpu_s, workload_cpu_s = tree - manager, worker names }
//!        ▲
//!   BackgroundLoad::finish(): the load must still be running (else the run is void), then killed
//! ```

use crate::BenchError;
use crate::best_static::watch_threads;
use crate::workload::{BenchWorkload, Launch};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use pinlearn_engine::live::{AffinityMask, end_with_caller};
use pinlearn_engine::preload::Preload;
use pinlearn_experiment::{LoadSchedule, Scheduler, SchedulerKind};
use pinlearn_topology::CpuSet;
use serde_json::Value;
use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{Read, Seek};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Where runs happen and how the background load is made.
#[derive(Clone, Debug)]
pub struct Runner {
    /// The `pinlearn` binary.
    pub exe: PathBuf,
    /// `--cpus` handed to every `pinlearn run` (None: the bench's own CPUs).
    pub cpus: Option<CpuSet>,
    /// The CPUs of every core, in the order the scenarios number cores.
    pub cores: Vec<CpuSet>,
    /// Start the load in its own session (`pinlearn load --setsid`).
    pub own_session: bool,
    /// `--config` handed to every `pinlearn run` (the learner's tunables).
    pub config: Option<PathBuf>,
    /// `--bubbles` handed to the runs of the bubble policies.
    pub bubbles: Option<PathBuf>,
    /// `--preload`: heartbeats for every `pinlearn run`, threads for the
    /// bubble policies' runs.
    pub preload: Option<Preload>,
    /// `--topology SPEC [--topology-map LIST]` handed to every `pinlearn run`.
    pub topology: Option<(String, Option<CpuSet>)>,
}

/// How the workload's threads are placed.
pub enum Placement<'a> {
    /// Under `pinlearn run` with this scheduler.
    Managed(&'a Scheduler),
    /// No manager: the bench pins each named thread to these CPUs (none:
    /// Linux alone, and the bench learns the threads' names).
    Unmanaged(&'a HashMap<String, CpuSet>),
}

/// One run to make.
pub struct RunSpec<'a> {
    /// For error messages, e.g. `aco C.2 learn, repeat 2`.
    pub label: String,
    pub workload: &'a BenchWorkload,
    pub threads: usize,
    pub placement: Placement<'a>,
    pub load: LoadSchedule,
    /// `--trace FILE` for managed runs.
    pub trace: Option<PathBuf>,
}

/// What one run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// The workload's own completion time (first thread start to last join).
    pub wall_s: f64,
    /// Mean over the worker threads of their mean speed (managed runs only).
    pub mean_speed: Option<f64>,
    /// The metric pinlearn measured speed with (managed runs only).
    pub metric: Option<String>,
    /// CPU time of the manager (`pinlearn run`), or of the bench's pinner.
    pub manager_cpu_s: f64,
    /// CPU time of the workload process (user + system).
    pub workload_cpu_s: f64,
    /// Re-pins pinlearn made (managed runs only).
    pub repins: Option<u64>,
    /// Share of the periods the learner's guard left to the OS (learn only).
    pub os_share: Option<f64>,
    /// The worker threads' names (unmanaged runs only).
    pub worker_names: Vec<String>,
}

impl Runner {
    /// Makes one run and waits for it (the background load is always
    /// stopped again, also on errors).
    pub fn run(&self, spec: &RunSpec<'_>) -> Result<Measured, BenchError> {
        let failed = |reason: String| BenchError::RunFailed {
            run: spec.label.clone(),
            reason,
        };
        let load = BackgroundLoad::start(self, &spec.load).map_err(&failed)?;
        let outcome = self.run_workload(spec);
        let load_outcome = load.finish();
        let measured = outcome.map_err(&failed)?;
        load_outcome.map_err(&failed)?;
        Ok(measured)
    }

    /// The options of a `pinlearn run` under `scheduler` that the bench's
    /// own flags add: the config file and the topology for every run, the
    /// rules file and the thread tree only where the policy places bubbles.
    fn managed_options(&self, scheduler: &Scheduler) -> Vec<OsString> {
        let bubbles = matches!(scheduler.kind, SchedulerKind::Policy(policy) if policy.places_bubbles());
        let mut options: Vec<OsString> = Vec::new();
        if let Some(config) = &self.config {
            options.extend(["--config".into(), config.as_os_str().to_owned()]);
        }
        if let Some((spec, map)) = &self.topology {
            options.extend(["--topology".into(), spec.into()]);
            if let Some(map) = map {
                options.extend(["--topology-map".into(), map.to_string().into()]);
            }
        }
        if bubbles && let Some(rules) = &self.bubbles {
            options.extend(["--bubbles".into(), rules.as_os_str().to_owned()]);
        }
        if let Some(preload) = self.preload {
            let parts = Preload {
                heartbeats: preload.heartbeats,
                threads: preload.threads && bubbles,
            };
            if parts.heartbeats || parts.threads {
                options.extend(["--preload".into(), parts.to_string().into()]);
            }
        }
        options
    }

    fn run_workload(&self, spec: &RunSpec<'_>) -> Result<Measured, String> {
        // The workload's command line: `pinlearn work ...` reporting JSON on
        // stdout, or the user's program told its threads in the environment.
        let (program, program_args): (&Path, Vec<String>) = match &spec.workload.launch {
            Launch::Work(args) => {
                let mut work_args: Vec<String> = vec!["work".into()];
                work_args.extend(args.iter().cloned());
                work_args.extend([
                    "--threads".into(),
                    spec.threads.to_string(),
                    "--json".into(),
                    "-".into(),
                    "--quiet".into(),
                ]);
                (&self.exe, work_args)
            }
            Launch::Command { argv, .. } => (Path::new(&argv[0]), argv[1..].to_vec()),
        };
        let external = matches!(spec.workload.launch, Launch::Command { .. });
        let mut command = Command::new(match spec.placement {
            Placement::Managed(_) => &self.exe,
            Placement::Unmanaged(_) => program,
        });
        if let Launch::Command { threads_env, .. } = &spec.workload.launch {
            command.env(threads_env, spec.threads.to_string());
        }
        let summary_file =
            tempfile::NamedTempFile::new().map_err(|e| format!("cannot create a temporary file: {e}"))?;
        match spec.placement {
            Placement::Managed(scheduler) => {
                // The workload ends with its `pinlearn run`, which ends
                // with the bench (below), killed or not.
                command
                    .arg("run")
                    .arg("--end-with-pinlearn")
                    .args(scheduler.run_options())
                    .arg("--json")
                    .arg(summary_file.path());
                if let Some(cpus) = &self.cpus {
                    command.arg("--cpus").arg(cpus.to_string());
                }
                if let Some(trace) = &spec.trace {
                    command.arg("--trace").arg(trace);
                }
                command.args(self.managed_options(scheduler));
                command.arg("--").arg(program).args(&program_args);
            }
            Placement::Unmanaged(_) => {
                command.args(&program_args);
                if let Some(cpus) = &self.cpus {
                    let mask = AffinityMask::new(cpus).map_err(|e| format!("CPUs {cpus}: {e}"))?;
                    // SAFETY: the hook runs in the child between fork and exec and
                    // only makes one async-signal-safe system call (no allocation).
                    unsafe {
                        command.pre_exec(move || mask.apply(0));
                    }
                }
            }
        }
        let mut stderr_file = tempfile::tempfile().map_err(|e| format!("cannot create a temporary file: {e}"))?;
        let stderr = stderr_file
            .try_clone()
            .map_err(|e| format!("cannot duplicate a temporary file: {e}"))?;
        // A bench that is killed takes its run with it.
        end_with_caller(&mut command);
        // A program of the user's writes what it likes: only `pinlearn
        // work`'s stdout is read.
        let stdout = if external { Stdio::null() } else { Stdio::piped() };
        let started = Instant::now();
        let mut child = command
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(Stdio::from(stderr))
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", command.get_program().to_string_lossy()))?;
        let pid = child.id();

        let stop_watcher = AtomicBool::new(false);
        let (output, waited, watched) = std::thread::scope(|scope| {
            let watcher = match spec.placement {
                Placement::Unmanaged(pins) => Some(scope.spawn(|| watch_threads(pid, pins, &stop_watcher))),
                Placement::Managed(_) => None,
            };
            let mut output = String::new();
            let read = child
                .stdout
                .take()
                .map(|mut out| out.read_to_string(&mut output))
                .transpose();
            let waited = wait_with_usage(pid);
            let elapsed = started.elapsed();
            stop_watcher.store(true, Ordering::Relaxed);
            let watched = watcher.map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
            (read.map(|_| output), waited.map(|w| (w, elapsed)), watched)
        });
        let ((status, tree_cpu), elapsed) = waited.map_err(|e| format!("cannot wait for the workload: {e}"))?;
        let output = output.map_err(|e| format!("cannot read the workload's output: {e}"))?;
        if status != 0 {
            let mut text = String::new();
            let _ = stderr_file.rewind();
            let _ = stderr_file.read_to_string(&mut text);
            let last = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no message");
            return Err(format!("exited with status {status}: {}", last.trim()));
        }
        let watched = watched
            .transpose()
            .map_err(|e| format!("best-static pinning failed: {e}"))?;
        let wall_s = if external {
            elapsed.as_secs_f64()
        } else {
            work_wall_s(&output)?
        };
        match spec.placement {
            Placement::Unmanaged(_) => {
                let watched = watched.unwrap_or_default();
                Ok(Measured {
                    wall_s,
                    mean_speed: None,
                    metric: None,
                    manager_cpu_s: watched.cpu.as_secs_f64(),
                    workload_cpu_s: tree_cpu,
                    repins: None,
                    os_share: None,
                    worker_names: watched.names,
                })
            }
            Placement::Managed(_) => {
                let text = std::fs::read_to_string(summary_file.path())
                    .map_err(|e| format!("cannot read pinlearn run's summary: {e}"))?;
                let summary: Value = serde_json::from_str(&text)
                    .map_err(|e| format!("pinlearn run wrote no readable JSON summary ({e})"))?;
                read_summary(&summary, wall_s, tree_cpu)
            }
        }
    }
}

/// The completion time `pinlearn work --json -` reported on stdout (the
/// first thread's start to the last join).
fn work_wall_s(output: &str) -> Result<f64, String> {
    let documents: Vec<Value> = serde_json::Deserializer::from_str(output)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .map_err(|e| format!("unreadable JSON on stdout ({e})"))?;
    let report = documents
        .iter()
        .find(|d| d.get("workload").is_some())
        .ok_or("the workload printed no JSON report")?;
    report
        .get("wall_s")
        .and_then(Value::as_f64)
        .ok_or_else(|| "the workload's report has no wall_s".to_string())
}

/// The fields of a `pinlearn run --json` summary the bench uses.
fn read_summary(summary: &Value, wall_s: f64, tree_cpu: f64) -> Result<Measured, String> {
    let manager_cpu_s = summary
        .get("manager_cpu_s")
        .and_then(Value::as_f64)
        .ok_or("the run summary has no manager_cpu_s")?;
    let threads = summary
        .get("threads")
        .and_then(Value::as_array)
        .ok_or("the run summary has no threads")?;
    // Worker threads: every thread but a process's main thread (tid = pid),
    // which in `pinlearn work` only waits for the workers.
    let workers: Vec<&Value> = threads
        .iter()
        .filter(|t| t.get("tid").and_then(Value::as_u64) != t.get("pid").and_then(Value::as_u64))
        .collect();
    let speeds: Vec<f64> = workers
        .iter()
        .filter_map(|t| t.get("mean_speed").and_then(Value::as_f64))
        .collect();
    let mean_speed = (!speeds.is_empty()).then(|| speeds.iter().sum::<f64>() / speeds.len() as f64);
    Ok(Measured {
        wall_s,
        mean_speed,
        metric: summary.get("metric").and_then(Value::as_str).map(str::to_string),
        manager_cpu_s,
        workload_cpu_s: (tree_cpu - manager_cpu_s).max(0.0),
        repins: summary.get("repins").and_then(Value::as_u64),
        os_share: summary.pointer("/guard/os_share").and_then(Value::as_f64),
        // The summary keeps the name a thread had when first seen, which
        // may be from before it named itself: names come from the watcher.
        worker_names: Vec::new(),
    })
}

/// Waits for child `pid` and returns its exit status (128 + N if killed by
/// signal N) and the CPU time (user + system) of it and the descendants it
/// waited for.
fn wait_with_usage(pid: u32) -> std::io::Result<(i32, f64)> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data, valid when zeroed; wait4 only writes to
    // the two pointers, which point to live locals.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        let waited = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
        if waited == pid as libc::pid_t {
            break;
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    let cpu = seconds(usage.ru_utime) + seconds(usage.ru_stime);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        -1
    };
    Ok((code, cpu))
}

/// The background load of one run: `pinlearn load` processes started,
/// paused and resumed on the schedule's phases by a controller thread, one
/// process per distinct set of loaded CPUs.
pub struct BackgroundLoad {
    stop: Option<mpsc::Sender<()>>,
    controller: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl BackgroundLoad {
    /// Starts the first phase's load before returning, and the controller
    /// thread for the phases that follow.
    pub fn start(runner: &Runner, schedule: &LoadSchedule) -> Result<Self, String> {
        if schedule.is_idle() {
            return Ok(BackgroundLoad {
                stop: None,
                controller: None,
            });
        }
        let exe = runner.exe.clone();
        let own_session = runner.own_session;
        let spawn = move |cpus: &CpuSet| spawn_load(&exe, cpus, own_session);
        let phases: Vec<(Duration, CpuSet)> = schedule
            .phases()
            .iter()
            .map(|phase| {
                let cpus = phase
                    .cores
                    .iter()
                    .filter_map(|&core| runner.cores.get(core))
                    .fold(CpuSet::new(), |all, core| all.union(core));
                (Duration::from_secs_f64(phase.start_s.max(0.0)), cpus)
            })
            .collect();
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
        let controller = std::thread::Builder::new()
            .name("bench-load".into())
            .spawn(move || {
                let started = Instant::now();
                // (CPU set, its load process), the running one last switched to.
                let mut loads: Vec<(CpuSet, Child)> = Vec::new();
                let mut active: Option<usize> = None;
                let mut outcome = Ok(());
                for (k, (start, cpus)) in phases.iter().enumerate() {
                    if k > 0 {
                        let wait = start.saturating_sub(started.elapsed());
                        match stop_rx.recv_timeout(wait) {
                            Err(RecvTimeoutError::Timeout) => {}
                            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                        }
                    }
                    let step = switch_load(&mut loads, &mut active, cpus, &spawn);
                    if k == 0 {
                        let _ = ready_tx.send(step.clone());
                    }
                    if let Err(e) = step {
                        outcome = Err(e);
                        break;
                    }
                }
                if outcome.is_ok() {
                    // The last phase lasts until the run ends.
                    let _ = stop_rx.recv();
                }
                let checked = stop_all(loads.into_iter().map(|(_, child)| child).collect());
                outcome.and(checked)
            })
            .map_err(|e| format!("cannot start the load controller thread: {e}"))?;
        let load = BackgroundLoad {
            stop: Some(stop_tx),
            controller: Some(controller),
        };
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(load),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(load
                .finish()
                .err()
                .unwrap_or_else(|| "the load controller ended early".into())),
        }
    }

    /// Stops the load; an error if a load process had ended on its own.
    pub fn finish(mut self) -> Result<(), String> {
        self.stop.take().map(|stop| stop.send(()));
        match self.controller.take() {
            Some(controller) => controller
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            None => Ok(()),
        }
    }
}

/// Pauses the running load and runs the one for `cpus` instead (resumed if
/// it ran before, started otherwise; nothing for an empty set).
fn switch_load(
    loads: &mut Vec<(CpuSet, Child)>,
    active: &mut Option<usize>,
    cpus: &CpuSet,
    spawn: &impl Fn(&CpuSet) -> Result<Child, String>,
) -> Result<(), String> {
    let next = loads.iter().position(|(set, _)| set == cpus);
    if active.is_some() && *active == next {
        return Ok(());
    }
    if let Some(current) = active.take() {
        signal(&loads[current].1, Signal::SIGSTOP)?;
    }
    if cpus.is_empty() {
        return Ok(());
    }
    match next {
        Some(index) => {
            signal(&loads[index].1, Signal::SIGCONT)?;
            *active = Some(index);
        }
        None => {
            loads.push((cpus.clone(), spawn(cpus)?));
            *active = Some(loads.len() - 1);
        }
    }
    Ok(())
}

impl Drop for BackgroundLoad {
    fn drop(&mut self) {
        // finish() not called (a panic unwinding): still stop the load.
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(controller) = self.controller.take() {
            let _ = controller.join();
        }
    }
}

fn spawn_load(exe: &Path, cpus: &CpuSet, own_session: bool) -> Result<Child, String> {
    let mut command = Command::new(exe);
    command.arg("load").arg("--cpus").arg(cpus.to_string());
    if own_session {
        command.arg("--setsid");
    }
    // The load dies with the thread that started it (the load controller,
    // which outlives every load it starts), so that a bench stopped by
    // Ctrl-C or killed leaves no load behind even though a load in its own
    // session does not get the terminal's SIGINT.
    end_with_caller(&mut command);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start the background load (pinlearn load --cpus {cpus}): {e}"))
}

fn signal(child: &Child, signal: Signal) -> Result<(), String> {
    kill(Pid::from_raw(child.id() as i32), signal)
        .map_err(|e| format!("cannot send {signal} to the background load (PID {}): {e}", child.id()))
}

/// Kills every load process and reaps it; an error if one had already
/// exited (the run then did not have the load it claims).
fn stop_all(children: Vec<Child>) -> Result<(), String> {
    let mut outcome = Ok(());
    for mut child in children {
        if let Ok(Some(status)) = child.try_wait() {
            outcome = outcome.and(Err(format!(
                "the background load (PID {}) ended during the run ({status}); run `pinlearn load --cpus LIST` to see why",
                child.id()
            )));
            continue;
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summary_fields_exclude_the_main_thread() {
        let summary = json!({
            "policy": "learn", "metric": "cpu", "manager_cpu_s": 0.25, "repins": 7,
            "threads": [
                {"pid": 10, "tid": 10, "name": "pinlearn", "mean_speed": 0.01},
                {"pid": 10, "tid": 11, "name": "aco-0", "mean_speed": 0.9},
                {"pid": 10, "tid": 12, "name": "aco-1", "mean_speed": 0.7},
                {"pid": 10, "tid": 13, "name": "aco-2", "mean_speed": null}
            ]
        });
        let measured = read_summary(&summary, 2.0, 4.25).expect("complete summary");
        assert_eq!(measured.wall_s, 2.0);
        assert!((measured.mean_speed.expect("speed") - 0.8).abs() < 1e-12);
        assert_eq!(measured.metric.as_deref(), Some("cpu"));
        assert_eq!(measured.manager_cpu_s, 0.25);
        assert_eq!(measured.workload_cpu_s, 4.0);
        assert_eq!(measured.repins, Some(7));
        let err = read_summary(&json!({"policy": "os", "threads": []}), 1.0, 1.0).expect_err("incomplete");
        assert!(err.contains("manager_cpu_s"), "{err}");
    }

    #[test]
    fn the_bench_s_config_and_topology_reach_every_run_and_bubbles_only_the_bubble_policies() {
        let runner = Runner {
            exe: PathBuf::from("pinlearn"),
            cpus: None,
            cores: Vec::new(),
            own_session: true,
            config: Some(PathBuf::from("learner.toml")),
            bubbles: Some(PathBuf::from("rules.toml")),
            preload: Some("heartbeats,threads".parse().expect("valid")),
            topology: Some(("node:2 core:1 pu:1".into(), Some("0-1".parse().expect("valid")))),
        };
        let options = |name: &str| -> Vec<String> {
            runner
                .managed_options(&Scheduler::parse(name).expect("valid"))
                .into_iter()
                .map(|o| o.into_string().expect("text"))
                .collect()
        };
        let topology = [
            "--config",
            "learner.toml",
            "--topology",
            "node:2 core:1 pu:1",
            "--topology-map",
            "0-1",
        ];
        for name in ["os", "static", "learn"] {
            let mut expected = topology.to_vec();
            expected.extend(["--preload", "heartbeats"]);
            assert_eq!(options(name), expected, "{name}");
        }
        for name in ["bubbles", "bubbles+learn"] {
            let mut expected = topology.to_vec();
            expected.extend(["--bubbles", "rules.toml", "--preload", "heartbeats,threads"]);
            assert_eq!(options(name), expected, "{name}");
        }
        let plain = Runner {
            config: None,
            bubbles: None,
            preload: Some("threads".parse().expect("valid")),
            topology: None,
            ..runner.clone()
        };
        assert!(
            plain
                .managed_options(&Scheduler::parse("learn").expect("valid"))
                .is_empty()
        );
        assert_eq!(
            plain.managed_options(&Scheduler::parse("bubbles").expect("valid")),
            ["--preload", "threads"]
        );
    }

    #[test]
    #[allow(clippy::zombie_processes)] // reaped by wait_with_usage, which clippy cannot see
    fn wait_with_usage_reports_status_and_cpu_time() {
        let child = Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 3"])
            .spawn()
            .expect("sh runs");
        let (status, cpu) = wait_with_usage(child.id()).expect("waited");
        assert_eq!(status, 3);
        assert!(cpu > 0.0, "a counting loop uses CPU time");
        let killed = Command::new("sleep").arg("30").spawn().expect("sleep runs");
        kill(Pid::from_raw(killed.id() as i32), Signal::SIGKILL).expect("kill");
        assert_eq!(wait_with_usage(killed.id()).expect("waited").0, 128 + 9);
    }
}
