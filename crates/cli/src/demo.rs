//! `pinlearn demo`: the main job on an embedded default, with no set-up.
//!
//! ```text
//!   pinlearn load --setsid --cpus FIRST          (another user's job, in its own session)
//!   repeat 3 times, alternating the order:
//!       pinlearn work aco --sync spin-then-block   under Linux alone
//!       the same                                    under pinlearn (learn, default settings)
//!   stop the load ─► median completion times side by side, and where pinlearn ran the threads
//! ```
//!
//! The workload is the papers' ACO task farm (OR-Library wt40:1) whose
//! threads spin for 1 ms before sleeping at each iteration's barrier, as
//! OpenMP runtimes do, with as many threads as allowed CPUs. Linux cannot
//! see that a spinning thread next to the loaded CPU's other program holds
//! every other thread back at the next barrier; pinlearn measures it. A run
//! lasts about 13 s under Linux: pinlearn's guard leaves the first 4.2 s to
//! Linux (until a wrong pin could cost at most 2% of the run), then compares
//! its placement with Linux's and keeps the better one.

use clap::Args;
use pinlearn_engine::{EngineError, Request, Session, Settings, Summary};
use pinlearn_topology::{CpuSet, Topology};
use serde_json::{Value, json};
use std::fs::File;
use std::io::{Read, Seek};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Write the results as JSON to FILE (- for stdout, instead of the text).
    #[arg(long, value_name = "FILE", value_parser = crate::args::parse_output)]
    pub json: Option<pinlearn_report::Output>,
    /// Seed of the workload and the learner.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Runs of each side (their median is compared).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub repeat: u32,
    /// Settings for pinlearn's side, as for `pinlearn run --config` (e.g.
    /// configs/unguarded-learner.toml); default: the built-in defaults.
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
}

/// The background load; killed when dropped.
struct Load(Child);

impl Drop for Load {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn exe() -> Result<std::path::PathBuf, EngineError> {
    std::env::current_exe().map_err(|e| EngineError::io("cannot find the pinlearn executable", e))
}

/// The workload command, writing its JSON report to `out`.
fn workload(threads: usize, seed: u64, out: &File) -> Result<Command, EngineError> {
    let mut command = Command::new(exe()?);
    command
        .args([
            "work",
            "aco",
            "--sync",
            "spin-then-block",
            "--spin",
            "1ms",
            "--iterations",
            "4500",
        ])
        .args(["--ants", &(16 * threads).to_string(), "--threads", &threads.to_string()])
        .args(["--seed", &seed.to_string(), "--quiet", "--json", "-"])
        .stdout(Stdio::from(
            out.try_clone().map_err(|e| EngineError::io("temporary file", e))?,
        ));
    // A demo that is stopped takes its workload with it.
    pinlearn_engine::live::end_with_caller(&mut command);
    Ok(command)
}

/// Ends this process by `signal` with its default action (the background
/// load ends with it: it dies with its parent).
fn end_by_signal(signal: i32) -> ! {
    // SAFETY: resetting a signal's action and raising it in this process.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
    // A signal whose default action is not to end the process.
    std::process::exit(128 + signal)
}

/// Reads the workload's JSON report and empties the file for the next run.
fn take_report(file: &mut File) -> Value {
    let mut text = String::new();
    let _ = file.rewind();
    let _ = file.read_to_string(&mut text);
    // The children write through a shared file offset: truncate and rewind
    // so the next run writes at the start again.
    let _ = file.set_len(0);
    let _ = file.rewind();
    serde_json::from_str(text.trim()).unwrap_or(Value::Null)
}

fn report_file() -> Result<File, EngineError> {
    let path = std::env::temp_dir().join(format!("pinlearn-demo-{}.json", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .map_err(|e| EngineError::io(format!("cannot create {}", path.display()), e))?;
    let _ = std::fs::remove_file(&path);
    Ok(file)
}

/// Completion times of one side, and its last workload report.
#[derive(Default)]
struct Side {
    times: Vec<f64>,
    report: Value,
}

impl Side {
    fn median(&self) -> f64 {
        let mut sorted = self.times.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        }
    }
}

pub fn run(args: &DemoArgs) -> Result<(), EngineError> {
    let base = match &args.config {
        Some(path) => Settings::from_toml_file(path)?,
        None => Settings::default(),
    };
    let allowed =
        pinlearn_engine::live::get_affinity(0).map_err(|e| EngineError::io("cannot read pinlearn's affinity", e))?;
    if allowed.len() < 2 {
        return Err(EngineError::bad_input(format!(
            "the demo needs at least 2 CPUs, this process may use {allowed}"
        )));
    }
    let threads = allowed.len();
    let loaded = allowed.first().expect("non-empty");
    if let Some(output) = &args.json {
        output.check_writable().map_err(EngineError::bad_input)?;
    }
    let text_on_stdout_too = !args.json.as_ref().is_some_and(pinlearn_report::Output::is_stdout);
    let say = |line: String| {
        if text_on_stdout_too {
            eprintln!("{line}");
        }
    };
    say(format!(
        "pinlearn demo: ACO on OR-Library wt40:1 with {threads} threads that spin 1 ms, then sleep, at every barrier,\n\
         while a program in another session keeps CPU {loaded} busy. Linux alone vs pinlearn ({}),\n\
         {} runs each, alternating.{}",
        args.config.as_ref().map_or("default settings".to_string(), |p| format!(
            "settings from {}",
            p.display()
        )),
        args.repeat,
        if base.learn.guard.enabled {
            " pinlearn leaves each run's first seconds to Linux,\n\
             then compares its own placement with Linux's and keeps the better one."
        } else {
            " The do-no-harm guard is off: pinlearn learns from the first period."
        }
    ));
    let settings = Settings {
        seed: args.seed,
        ..base
    };
    let request = Request {
        settings,
        cpus: None,
        trace: None,
        bubbles: None,
        watchdog: std::env::current_exe().ok(),
    };
    let machine = Topology::detect()
        .map_err(|e| EngineError::io("cannot read the machine topology", std::io::Error::other(e)))?;
    let session = Session::prepare(&request, &allowed, &machine)?;

    // The load is in its own session (the terminal's Ctrl-C does not reach
    // it) and ends with this thread on every way out, SIGKILL included.
    let mut load = Command::new(exe()?);
    load.args(["load", "--setsid", "--cpus", &CpuSet::from_iter([loaded]).to_string()])
        .stdout(Stdio::null());
    pinlearn_engine::live::end_with_caller(&mut load);
    let _load = Load(
        load.spawn()
            .map_err(|e| EngineError::io("cannot start the background load", e))?,
    );
    std::thread::sleep(std::time::Duration::from_millis(200));

    let mut out = report_file()?;
    let (mut linux, mut learned) = (Side::default(), Side::default());
    let mut last_summary = None;
    for repeat in 0..args.repeat {
        for learn in [repeat % 2 == 1, repeat % 2 == 0] {
            say(format!(
                "  run {}/{}: {}",
                repeat + 1,
                args.repeat,
                if learn { "pinlearn" } else { "Linux alone" }
            ));
            let command = workload(threads, args.seed, &out)?;
            let started = Instant::now();
            if learn {
                let summary = pinlearn_engine::supervise::run(&session, command, None)?;
                if let Some(signal) = summary.signal {
                    // Stopped (Ctrl-C, kill) while pinlearn held the signal
                    // for the workload, which may have ended cleanly: end as
                    // the signal would have ended the demo.
                    end_by_signal(signal);
                }
                if summary.exit_code != Some(0) {
                    return Err(EngineError::io(
                        "the demo workload failed under pinlearn",
                        std::io::Error::other(format!("exit status {:?}", summary.exit_code)),
                    ));
                }
                learned.times.push(started.elapsed().as_secs_f64());
                learned.report = take_report(&mut out);
                last_summary = Some(summary);
            } else {
                let mut command = command;
                let status = command
                    .status()
                    .map_err(|e| EngineError::io("cannot run the workload", e))?;
                if !status.success() {
                    return Err(EngineError::io(
                        "the demo workload failed",
                        std::io::Error::other(status.to_string()),
                    ));
                }
                linux.times.push(started.elapsed().as_secs_f64());
                linux.report = take_report(&mut out);
            }
        }
    }
    print_results(args, loaded, &linux, &learned, &last_summary.expect("at least one run"));
    Ok(())
}

fn print_results(args: &DemoArgs, loaded: usize, linux: &Side, learned: &Side, summary: &Summary) {
    let workers: Vec<_> = summary
        .threads
        .iter()
        .filter(|t| t.who.name.starts_with("aco-"))
        .collect();
    let (os_s, learn_s) = (linux.median(), learned.median());
    if let Some(output) = &args.json {
        let report = json!({
            "loaded_cpu": loaded,
            "os_s": linux.times,
            "pinlearn_s": learned.times,
            "os_median_s": os_s,
            "pinlearn_median_s": learn_s,
            "speedup": os_s / learn_s,
            "os_workload": linux.report,
            "pinlearn_workload": learned.report,
            "pinlearn_last_run": summary,
        });
        if let Err(e) = output.write(&serde_json::to_string_pretty(&report).expect("json")) {
            eprintln!("pinlearn: {e}");
        }
        if output.is_stdout() {
            return;
        }
    }
    let tardiness = |v: &Value| {
        v.get("best_tardiness")
            .map_or_else(|| "?".to_string(), Value::to_string)
    };
    let times = |s: &Side| s.times.iter().map(|t| format!("{t:.2}")).collect::<Vec<_>>().join(" ");
    println!();
    println!(
        "  {:<18} {:>12}  {:<24} {:>15}",
        "scheduler", "median (s)", "runs (s)", "best tardiness"
    );
    println!(
        "  {:<18} {:>12.2}  {:<24} {:>15}",
        "Linux alone",
        os_s,
        times(linux),
        tardiness(&linux.report)
    );
    println!(
        "  {:<18} {:>12.2}  {:<24} {:>15}",
        "pinlearn (learn)",
        learn_s,
        times(learned),
        tardiness(&learned.report)
    );
    println!();
    if learn_s < os_s {
        println!(
            "  pinlearn finished {:.2}x faster ({:.0}% less time, medians).",
            os_s / learn_s,
            100.0 * (1.0 - learn_s / os_s)
        );
    } else {
        println!(
            "  pinlearn took {:.0}% longer than Linux here (medians).",
            100.0 * (learn_s / os_s - 1.0)
        );
    }
    println!(
        "  last pinlearn run: {} re-pins, pinlearn's own CPU time {:.3} s ({:.2}% of one core), metric {}.",
        summary.repins, summary.manager_cpu_s, summary.manager_cpu_pct, summary.metric
    );
    if let Some(guard) = &summary.guard {
        println!(
            "  Linux placed the threads in {:.0}% of that run's periods (the first seconds, then its windows as the better side or as a probe).",
            100.0 * guard.os_share
        );
    }
    println!("  where its worker threads ran (CPU {loaded} is the loaded one; 0-1 style lists = the OS balances):");
    for t in workers {
        let shares: Vec<String> = t
            .time_on
            .iter()
            .take(3)
            .map(|s| format!("{} {:.0}%", s.cpus, 100.0 * s.share))
            .collect();
        println!("    {:<10} {}", t.who.name, shares.join(", "));
    }
}
