//! `pinlearn load`: a background CPU load, standing in for another user's
//! job in experiments and the demo: one spinning thread pinned to each given
//! CPU, busy for a share of every 100 ms, until killed or `--duration` ends.

use clap::Args;
use pinlearn_engine::EngineError;
use pinlearn_topology::CpuSet;
use std::hint::black_box;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct LoadArgs {
    /// CPUs to load, one spinning thread each (list syntax).
    #[arg(long, value_parser = crate::args::parse_cpus, value_name = "LIST")]
    pub cpus: CpuSet,
    /// Percentage of each 100 ms the threads spin (the rest they sleep).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u8).range(1..=100))]
    pub busy: u8,
    /// Stop after DUR (default: run until killed).
    #[arg(long, value_name = "DUR", value_parser = crate::args::parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Start a new session first (as another user's job would be), so Linux's
    /// autogroup treats this load as a separate group.
    #[arg(long)]
    pub setsid: bool,
}

pub fn run(args: &LoadArgs) -> Result<(), EngineError> {
    let duration = args.duration;
    let allowed = pinlearn_engine::live::get_affinity(0).map_err(|e| EngineError::io("cannot read the affinity", e))?;
    let outside = args.cpus.difference(&allowed);
    if !outside.is_empty() {
        return Err(EngineError::bad_input(format!(
            "--cpus: CPUs {outside} are outside the allowed CPUs ({allowed})"
        )));
    }
    if args.setsid {
        // Fails only if we already lead a session, which is fine.
        let _ = nix::unistd::setsid();
    }
    let busy = Duration::from_millis(u64::from(args.busy));
    let started = Instant::now();
    std::thread::scope(|scope| {
        let mut workers = Vec::new();
        for cpu in args.cpus.iter() {
            let worker = std::thread::Builder::new()
                .name(format!("load-{cpu}"))
                .spawn_scoped(scope, move || -> Result<(), EngineError> {
                    let me = CpuSet::from_iter([cpu]);
                    pinlearn_engine::live::set_affinity(0, &me)
                        .map_err(|e| EngineError::io(format!("cannot pin the load to CPU {cpu}"), e))?;
                    let mut x = 0u64;
                    loop {
                        let slice = Instant::now();
                        while slice.elapsed() < busy {
                            for _ in 0..1000 {
                                x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
                            }
                        }
                        if busy < Duration::from_millis(100) {
                            std::thread::sleep(Duration::from_millis(100) - busy);
                        }
                        if duration.is_some_and(|d| started.elapsed() >= d) {
                            return Ok(());
                        }
                    }
                })
                .map_err(|e| EngineError::io("cannot start a load thread", e))?;
            workers.push(worker);
        }
        for worker in workers {
            worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        }
        Ok(())
    })
}
