//! `pinlearn`: the command line. A thin layer: parse, build a request, call
//! the engine or a workload, print, and map errors to exit statuses.
//!
//! ```text
//!   argv ─► clap (args.rs, work.rs, sim.rs, bench.rs) ─► run | attach ─► pinlearn_engine::supervise ─► summary
//!                            ├► topo        ─► topology + probes
//!                            ├► demo        ─► demo.rs (OS alone vs pinlearn, with a load)
//!                            ├► work        ─► pinlearn_workloads
//!                            ├► load        ─► load.rs (background CPU load generator)
//!                            ├► sim         ─► pinlearn_sim (the engine on a modelled NUMA machine)
//!                            ├► bench       ─► pinlearn_bench (the papers' matrix on this machine)
//!                            ├► restore     ─► the masks a dead manager left (its journal)
//!                            ├► status      ─► where a running supervision's threads and bubbles are
//!                            ├► watchdog    ─► (hidden) started by run/attach, restores if the manager dies
//!                            └► config      ─► the default settings as TOML
//!   errors: one line on stderr through failure.rs's Failure; status 2 for bad
//!   input only, 1 for failures at run time, the program's own status for `run`.
//!   Every --json takes FILE, or - for stdout where nothing else writes there.
//! ```

mod args;
mod bench;
mod demo;
mod failure;
mod load;
mod sim;
mod topo;
mod work;

use args::{Cli, Command, CommonArgs};
use clap::Parser;
use failure::Failure;
use pinlearn_engine::preload::Preload;
use pinlearn_engine::{EngineError, Request, Session, Settings, Summary};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return args::report_clap_error(e),
    };
    match dispatch(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("pinlearn: {e}");
            ExitCode::from(e.status())
        }
    }
}

fn dispatch(cli: Cli) -> Result<u8, Failure> {
    match cli.command {
        Command::Run(run) => {
            if run.common.json.as_ref().is_some_and(pinlearn_report::Output::is_stdout) {
                return Err(Failure::BadInput(
                    "run --json -: the program writes to stdout too; give a file, e.g. --json summary.json".into(),
                ));
            }
            let session = prepare(
                &run.common,
                &pinlearn_engine::live::get_affinity(0)
                    .map_err(|e| EngineError::io("cannot read pinlearn's affinity", e))?,
                run.preload,
            )?;
            let (program, args) = run.command.split_first().expect("clap requires a command");
            let mut command = std::process::Command::new(program);
            command.args(args);
            if let Some(preload) = &run.preload {
                let pinlearn = std::env::current_exe()
                    .map_err(|e| EngineError::io("cannot find the pinlearn binary beside its preload library", e))?;
                preload.apply(&mut command, &pinlearn_engine::preload::library(&pinlearn)?);
            }
            if run.end_with_pinlearn {
                pinlearn_engine::live::end_with_caller(&mut command);
            }
            note(&run.common, &session);
            let summary = pinlearn_engine::supervise::run(&session, command, run.duration)?;
            print_summary(&run.common, &summary)?;
            Ok(summary.exit_code.unwrap_or(0).clamp(0, 255) as u8)
        }
        Command::Attach(attach) => {
            pinlearn_engine::supervise::check_attachable(attach.pid)?;
            let allowed = pinlearn_engine::live::get_affinity(attach.pid)
                .map_err(|e| EngineError::bad_input(format!("cannot read the affinity of PID {}: {e}", attach.pid)))?;
            let session = prepare(&attach.common, &allowed, None)?;
            note(&attach.common, &session);
            let summary = pinlearn_engine::supervise::attach(&session, attach.pid, attach.duration)?;
            print_summary(&attach.common, &summary)?;
            Ok(0)
        }
        Command::Topo(args) => topo::run(&args).map(|()| 0),
        Command::Demo(args) => demo::run(&args).map(|()| 0).map_err(Failure::from),
        Command::Work(work) => {
            if let Some(output) = &work.json {
                output.check_writable().map_err(Failure::BadInput)?;
            }
            let report = pinlearn_workloads::run(&work.to_work())?;
            match &work.json {
                Some(output) => output.write(&report.to_string()).map_err(Failure::Runtime)?,
                None if !work.quiet => println!("{}", pinlearn_workloads::human_summary(&report)),
                None => {}
            }
            Ok(0)
        }
        Command::Load(args) => load::run(&args).map(|()| 0).map_err(Failure::from),
        Command::Sim(args) => sim::run(&args).map(|()| 0),
        Command::Bench(args) => bench::run(&args).map(|()| 0),
        Command::Watchdog(args) => watchdog(&args),
        Command::Restore(args) => restore(&args),
        Command::Status(args) => status(&args),
        Command::Config => {
            print!("{}", Settings::default().to_toml());
            Ok(0)
        }
    }
}

/// `pinlearn watchdog` (started by run and attach, hidden): restores the
/// journal's masks if the manager dies.
fn watchdog(args: &args::WatchdogArgs) -> Result<u8, Failure> {
    let watched = pinlearn_engine::live::restore::watch(args.manager, &args.journal);
    if let Some(target) = args.target {
        // A killed manager leaves its status file: it would tell `pinlearn
        // status` of a supervision that no longer is.
        let _ = pinlearn_engine::status::remove_stale(target);
    }
    match watched {
        Ok(None) => Ok(0),
        Ok(Some(restored)) => {
            eprintln!(
                "pinlearn watchdog: the manager (PID {}) ended without restoring; {} threads restored, {} had ended{}",
                args.manager,
                restored.threads,
                restored.gone,
                failed_text(&restored)
            );
            Ok(u8::from(!restored.failed.is_empty()))
        }
        Err(e) => Err(Failure::Runtime(format!(
            "watchdog: cannot restore from {}: {e}",
            args.journal.display()
        ))),
    }
}

/// `pinlearn status PID`: where the threads and bubbles of a supervised
/// program are, from the status its manager keeps.
fn status(args: &args::StatusArgs) -> Result<u8, Failure> {
    use pinlearn_engine::status::{StatusError, read};
    let status = read(args.pid).map_err(|e| match e {
        StatusError::NotSupervised(..) => Failure::BadInput(e.to_string()),
        StatusError::Unreadable(..) | StatusError::Stale { .. } => Failure::Runtime(e.to_string()),
    })?;
    match &args.json {
        Some(output) => {
            let json = serde_json::to_string_pretty(&status).map_err(|e| Failure::Runtime(e.to_string()))?;
            output.write(&json).map_err(Failure::Runtime)?;
        }
        None => print!("{}", status.to_text()),
    }
    Ok(0)
}

/// `pinlearn restore PID`: puts back the masks a dead manager left.
fn restore(args: &args::RestoreArgs) -> Result<u8, Failure> {
    let path = pinlearn_engine::live::journal_path(args.pid);
    if !path.exists() {
        return Err(Failure::BadInput(format!(
            "nothing to restore for PID {}: no journal at {} (pinlearn removes it once every mask is back)",
            args.pid,
            path.display()
        )));
    }
    let restored = pinlearn_engine::live::restore::restore(&path)
        .map_err(|e| Failure::Runtime(format!("cannot restore from {}: {e}", path.display())))?;
    // The status a killed manager left goes with its journal.
    let _ = pinlearn_engine::status::remove_stale(args.pid);
    println!(
        "restored {} threads of PID {} ({} had ended){}",
        restored.threads,
        args.pid,
        restored.gone,
        failed_text(&restored)
    );
    if restored.failed.is_empty() {
        Ok(0)
    } else {
        Err(Failure::Runtime(format!(
            "some masks could not be restored; the journal {} is kept",
            path.display()
        )))
    }
}

fn failed_text(restored: &pinlearn_engine::live::Restored) -> String {
    if restored.failed.is_empty() {
        return String::new();
    }
    let list: Vec<String> = restored
        .failed
        .iter()
        .map(|(tid, why)| format!("{tid}: {why}"))
        .collect();
    format!("; could not restore {}", list.join(", "))
}

/// Settings from defaults, `--config`, then flags.
pub fn settings(common: &CommonArgs) -> Result<Settings, EngineError> {
    let mut settings = match &common.config {
        Some(path) => Settings::from_toml_file(path)?,
        None => Settings::default(),
    };
    common.apply(&mut settings)?;
    Ok(settings)
}

/// The checked plan for `run` (with its `--preload`, if any) or `attach`.
fn prepare(
    common: &CommonArgs,
    allowed: &pinlearn_topology::CpuSet,
    preload: Option<Preload>,
) -> Result<Session, EngineError> {
    if let Some(output) = &common.json {
        output.check_writable().map_err(EngineError::bad_input)?;
    }
    let mut settings = settings(common)?;
    if preload.is_some_and(|p| p.heartbeats) && settings.metric == pinlearn_engine::Metric::Auto {
        // The beats the library gives are the progress to learn from
        // (threads that do not beat are scored by their samples).
        settings.metric = pinlearn_engine::Metric::Heartbeat;
    }
    let request = Request {
        settings,
        cpus: common.cpus.clone(),
        trace: common.trace.clone(),
        bubbles: common.bubbles.clone(),
        watchdog: Some(
            std::env::current_exe()
                .map_err(|e| EngineError::io("cannot find the pinlearn binary for its watchdog", e))?,
        ),
    };
    if let Some(map) = &common.topology_map
        && !map.is_subset(allowed)
    {
        return Err(EngineError::bad_input(format!(
            "--topology-map {map}: CPUs {} are outside the CPUs the target may use ({allowed})",
            map.difference(allowed)
        )));
    }
    let session = Session::prepare(&request, allowed, &common.topology()?)?;
    if preload.is_some_and(|p| p.threads) && session.declared.is_none() {
        return Err(EngineError::bad_input(
            "--preload threads declares the program's thread tree as bubbles: use it with \
             --policy bubbles or bubbles+learn, without a --bubbles file",
        ));
    }
    Ok(session)
}

fn note(common: &CommonArgs, session: &Session) {
    if !common.quiet {
        for note in &session.notes {
            eprintln!("pinlearn: {note}");
        }
    }
}

/// The summary as JSON to `--json FILE` (`-`: stdout), and as text on
/// stderr unless quiet.
fn print_summary(common: &CommonArgs, summary: &Summary) -> Result<(), Failure> {
    if let Some(output) = &common.json {
        let text = serde_json::to_string_pretty(summary).expect("summary serialises");
        output.write(&text).map_err(Failure::Runtime)?;
    }
    if !common.quiet {
        eprint!("{}", summary.to_text());
    }
    Ok(())
}
