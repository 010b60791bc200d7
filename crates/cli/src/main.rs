//! `pinlearn`: the command line. A thin layer: parse, build a request, call
//! the engine or a workload, print, and map errors to exit statuses.
//!
//! ```text
//!   argv ─► clap (args.rs) ─► run | attach ─► pinlearn_engine::supervise ─► summary (text/JSON)
//!                            ├► topo        ─► topology + probes
//!                            ├► demo        ─► demo.rs (OS alone vs pinlearn, with a load)
//!                            ├► work        ─► pinlearn_workloads
//!                            ├► load        ─► load.rs (background CPU load generator)
//!                            ├► sim         ─► pinlearn_sim (the engine on a modelled NUMA machine)
//!                            ├► bench       ─► pinlearn_bench (the papers' matrix on this machine)
//!                            └► config      ─► the default settings as TOML
//!   errors: one line on stderr; status 2 for bad input, 1 for runtime failures,
//!   the program's own status for `run`.
//! ```

mod args;
mod demo;
mod load;
mod topo;

use args::{Cli, Command, CommonArgs};
use clap::Parser;
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
            ExitCode::from(e.exit_status().clamp(0, 255) as u8)
        }
    }
}

fn dispatch(cli: Cli) -> Result<u8, EngineError> {
    match cli.command {
        Command::Run(run) => {
            let session = prepare(
                &run.common,
                &pinlearn_engine::live::get_affinity(0)
                    .map_err(|e| EngineError::io("cannot read pinlearn's affinity", e))?,
            )?;
            note(&run.common, &session);
            let duration = run
                .duration
                .as_deref()
                .map(pinlearn_engine::parse_duration)
                .transpose()?;
            let (program, args) = run.command.split_first().expect("clap requires a command");
            let mut command = std::process::Command::new(program);
            command.args(args);
            let summary = pinlearn_engine::supervise::run(&session, command, duration)?;
            print_summary(&run.common, &summary);
            Ok(summary.exit_code.unwrap_or(0).clamp(0, 255) as u8)
        }
        Command::Attach(attach) => {
            let duration = attach
                .duration
                .as_deref()
                .map(pinlearn_engine::parse_duration)
                .transpose()?;
            pinlearn_engine::supervise::check_attachable(attach.pid)?;
            let allowed = pinlearn_engine::live::get_affinity(attach.pid)
                .map_err(|e| EngineError::bad_input(format!("cannot read the affinity of PID {}: {e}", attach.pid)))?;
            let session = prepare(&attach.common, &allowed)?;
            note(&attach.common, &session);
            let summary = pinlearn_engine::supervise::attach(&session, attach.pid, duration)?;
            print_summary(&attach.common, &summary);
            Ok(0)
        }
        Command::Topo(args) => topo::run(&args).map(|()| 0),
        Command::Demo(args) => demo::run(&args).map(|()| 0),
        Command::Work(work) => {
            let report = pinlearn_workloads::run(&work).map_err(|e| EngineError::bad_input(e.to_string()))?;
            if work.json {
                println!("{report}");
            } else if !work.quiet {
                println!("{}", pinlearn_workloads::human_summary(&report));
            }
            Ok(0)
        }
        Command::Load(args) => load::run(&args).map(|()| 0),
        Command::Sim(sim) => match pinlearn_sim::run(&sim) {
            Ok(()) => Ok(0),
            Err(e) if e.is_bad_input() => Err(EngineError::bad_input(e.to_string())),
            Err(e) => Err(EngineError::io("pinlearn sim", std::io::Error::other(e.to_string()))),
        },
        Command::Bench(bench) => {
            let exe = std::env::current_exe().map_err(|e| EngineError::io("cannot find the pinlearn executable", e))?;
            match pinlearn_bench::run(&bench, &exe) {
                Ok(()) => Ok(0),
                Err(e) if e.is_bad_input() => Err(EngineError::bad_input(e.to_string())),
                Err(e) => Err(EngineError::io("pinlearn bench", std::io::Error::other(e.to_string()))),
            }
        }
        Command::Config => {
            print!("{}", Settings::default().to_toml());
            Ok(0)
        }
    }
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

fn prepare(common: &CommonArgs, allowed: &pinlearn_topology::CpuSet) -> Result<Session, EngineError> {
    let request = Request {
        settings: settings(common)?,
        cpus: common.cpus.clone(),
        trace: common.trace.clone(),
    };
    if let Some(map) = &common.topology_map
        && !map.is_subset(allowed)
    {
        return Err(EngineError::bad_input(format!(
            "--topology-map {map}: CPUs {} are outside the CPUs the target may use ({allowed})",
            map.difference(allowed)
        )));
    }
    Session::prepare(&request, allowed, &common.topology()?)
}

fn note(common: &CommonArgs, session: &Session) {
    if !common.quiet {
        for note in &session.notes {
            eprintln!("pinlearn: {note}");
        }
    }
}

fn print_summary(common: &CommonArgs, summary: &Summary) {
    if common.json {
        println!("{}", serde_json::to_string_pretty(summary).expect("summary serialises"));
    } else if !common.quiet {
        eprint!("{}", summary.to_text());
    }
}
