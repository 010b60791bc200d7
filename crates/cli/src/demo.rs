//! `pinlearn demo`: the main job on an embedded default, with no set-up.
//!
//! ```text
//!   pinlearn load --cpus FIRST --setsid        (another user's job, own session)
//!   run 1: pinlearn work aco --sync spin-then-block   under the OS alone
//!   run 2: the same                                   under pinlearn (learn, defaults)
//!   stop the load ─► completion times side by side, where pinlearn left the threads
//! ```
//!
//! The workload is the papers' ACO task farm whose threads spin for a while
//! before sleeping at each iteration's barrier (a common runtime default),
//! with as many threads as allowed CPUs: a case where Linux cannot see that
//! a spinning thread on the loaded CPU holds everyone back.

use clap::Args;
use pinlearn_engine::{EngineError, Request, Session, Settings, Summary};
use pinlearn_topology::{CpuSet, Topology};
use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Seed of the workload and the learner.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
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

fn workload(threads: usize, seed: u64, out: &std::fs::File) -> Result<Command, EngineError> {
    let mut command = Command::new(exe()?);
    command
        .args(["work", "aco", "--sync", "spin-then-block", "--quiet", "--json"])
        .args(["--threads", &threads.to_string(), "--seed", &seed.to_string()])
        .stdout(Stdio::from(
            out.try_clone().map_err(|e| EngineError::io("temporary file", e))?,
        ));
    Ok(command)
}

fn read_report(file: &mut std::fs::File) -> Value {
    use std::io::{Read, Seek};
    let mut text = String::new();
    let _ = file.rewind();
    let _ = file.read_to_string(&mut text);
    let _ = file.set_len(0);
    serde_json::from_str(text.trim()).unwrap_or(Value::Null)
}

pub fn run(args: &DemoArgs) -> Result<(), EngineError> {
    let allowed =
        pinlearn_engine::live::get_affinity(0).map_err(|e| EngineError::io("cannot read pinlearn's affinity", e))?;
    if allowed.len() < 2 {
        return Err(EngineError::bad_input(format!(
            "the demo needs at least 2 CPUs, this process may use {allowed}"
        )));
    }
    let threads = allowed.len();
    let loaded = allowed.first().expect("non-empty");
    let loaded_set = CpuSet::from_iter([loaded]);
    let say = |line: String| {
        if !args.json {
            eprintln!("{line}");
        }
    };
    say(format!(
        "pinlearn demo: ACO on OR-Library wt40:1 with {threads} threads that spin, then sleep, at every iteration's barrier,\n\
         while another session's program keeps CPU {loaded} busy. Run 1: Linux alone. Run 2: pinlearn (learn, default settings)."
    ));

    let _load = Load(
        Command::new(exe()?)
            .args(["load", "--setsid", "--cpus", &loaded_set.to_string()])
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| EngineError::io("cannot start the background load", e))?,
    );
    std::thread::sleep(std::time::Duration::from_millis(200));

    let mut out = tempfile_in_tmp()?;
    say("  run 1/2: Linux alone ...".into());
    let t0 = Instant::now();
    let status = workload(threads, args.seed, &out)?
        .status()
        .map_err(|e| EngineError::io("cannot run the workload", e))?;
    let os_s = t0.elapsed().as_secs_f64();
    if !status.success() {
        return Err(EngineError::io(
            "the demo workload failed",
            std::io::Error::other(status.to_string()),
        ));
    }
    let os_report = read_report(&mut out);

    say("  run 2/2: pinlearn ...".into());
    let settings = Settings {
        seed: args.seed,
        ..Settings::default()
    };
    let request = Request {
        settings,
        cpus: None,
        trace: None,
    };
    let machine = Topology::detect()
        .map_err(|e| EngineError::io("cannot read the machine topology", std::io::Error::other(e)))?;
    let session = Session::prepare(&request, &allowed, &machine)?;
    let t0 = Instant::now();
    let summary = pinlearn_engine::supervise::run(&session, workload(threads, args.seed, &out)?, None)?;
    let learn_s = t0.elapsed().as_secs_f64();
    if summary.exit_code != Some(0) {
        return Err(EngineError::io(
            "the demo workload failed under pinlearn",
            std::io::Error::other(format!("{:?}", summary.exit_code)),
        ));
    }
    let learn_report = read_report(&mut out);
    print_results(args, loaded, os_s, learn_s, &os_report, &learn_report, &summary);
    Ok(())
}

fn tempfile_in_tmp() -> Result<std::fs::File, EngineError> {
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

fn print_results(
    args: &DemoArgs,
    loaded: usize,
    os_s: f64,
    learn_s: f64,
    os: &Value,
    learn: &Value,
    summary: &Summary,
) {
    let workers: Vec<_> = summary
        .threads
        .iter()
        .filter(|t| t.who.name.starts_with("aco-"))
        .collect();
    if args.json {
        let report = json!({
            "loaded_cpu": loaded,
            "os_s": os_s,
            "pinlearn_s": learn_s,
            "speedup": os_s / learn_s,
            "os_workload": os,
            "pinlearn_workload": learn,
            "pinlearn": summary,
        });
        println!("{}", serde_json::to_string_pretty(&report).expect("json"));
        return;
    }
    let tardiness = |v: &Value| {
        v.get("best_tardiness")
            .map(|t| t.to_string())
            .unwrap_or_else(|| "?".into())
    };
    println!();
    println!("  {:<22} {:>10} {:>16}", "scheduler", "time (s)", "best tardiness");
    println!("  {:<22} {:>10.2} {:>16}", "Linux alone", os_s, tardiness(os));
    println!(
        "  {:<22} {:>10.2} {:>16}",
        "pinlearn (learn)",
        learn_s,
        tardiness(learn)
    );
    println!();
    if learn_s < os_s {
        println!(
            "  pinlearn finished {:.2}x faster ({:.0}% less time).",
            os_s / learn_s,
            100.0 * (1.0 - learn_s / os_s)
        );
    } else {
        println!(
            "  pinlearn took {:.0}% longer than Linux here.",
            100.0 * (learn_s / os_s - 1.0)
        );
    }
    println!(
        "  pinlearn: {} re-pins, its own CPU time {:.3} s ({:.2}% of one core), metric {}.",
        summary.repins, summary.manager_cpu_s, summary.manager_cpu_pct, summary.metric
    );
    println!("  where the worker threads ran under pinlearn (CPU {loaded} is the loaded one):");
    for t in workers {
        let shares: Vec<String> = t
            .time_on
            .iter()
            .take(3)
            .map(|s| format!("{} {:.0}%", s.cpus, 100.0 * s.share))
            .collect();
        println!(
            "    {:<10} last on {:<6} time on: {}",
            t.who.name,
            t.last_place,
            shares.join(", ")
        );
    }
}
