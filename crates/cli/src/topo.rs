//! `pinlearn topo`: the machine as pinlearn sees it — topology, the CPUs
//! this process may use, the places a policy would choose among, and which
//! measurement probes work here.

use clap::Args;
use pinlearn_engine::{EngineError, Places};
use pinlearn_topology::Topology;
use serde_json::json;

#[derive(Args, Debug)]
pub struct TopoArgs {
    /// Inspect an hwloc synthetic string or XML file instead of this machine.
    #[arg(long, value_name = "SPEC")]
    pub topology: Option<String>,
    /// Write the report as JSON to FILE (- for stdout, instead of the text).
    #[arg(long, value_name = "FILE", value_parser = crate::args::parse_output)]
    pub json: Option<pinlearn_report::Output>,
}

pub fn run(args: &TopoArgs) -> Result<(), crate::failure::Failure> {
    let topology = match &args.topology {
        Some(spec) => Topology::from_spec(spec).map_err(|e| EngineError::bad_input(e.to_string()))?,
        None => Topology::detect()
            .map_err(|e| EngineError::io("cannot read the machine topology", std::io::Error::other(e)))?,
    };
    let allowed =
        pinlearn_engine::live::get_affinity(0).map_err(|e| EngineError::io("cannot read pinlearn's affinity", e))?;
    let usable = if args.topology.is_some() {
        topology.clone()
    } else {
        topology
            .restrict(&allowed)
            .map_err(|e| EngineError::bad_input(e.to_string()))?
    };
    let places = if args.topology.is_some() {
        Places::new(&usable)
    } else {
        Places::on_this_machine(&usable)
    };
    let instructions = pinlearn_engine::live::instructions_supported();
    let sampling = pinlearn_engine::live::sampling_supported();
    let faults = pinlearn_engine::live::fault_recording_supported();
    // Where a live session moves threads' memory after them by default:
    // real memory nodes (`move_thread_memory`).
    let real_nodes = args.topology.is_none() && usable.nodes().len() > 1 && usable.source().starts_with("hwloc");
    let schedstat = std::fs::read_to_string("/proc/self/schedstat").is_ok();
    let io = std::fs::read_to_string("/proc/self/io").is_ok();
    // What other programs run on the CPUs (the run summary's others_share).
    let proc_stat = std::fs::read_to_string("/proc/stat").is_ok();
    let (auto, _) =
        pinlearn_engine::live::resolve_metric(pinlearn_engine::config::Metric::Auto).map_err(EngineError::bad_input)?;
    let heartbeat_dir = pinlearn_heartbeat::channel_path(std::process::id())
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    // `run --preload heartbeats` gives unmodified OpenMP programs heartbeats.
    let preload = std::env::current_exe()
        .map_err(|e| EngineError::io("cannot find the pinlearn binary", e))
        .and_then(|exe| pinlearn_engine::preload::library(&exe));
    if let Some(output) = &args.json {
        let report = json!({
            "topology": topology,
            "allowed_cpus": allowed.to_string(),
            "places": places.cpus.iter().zip(places.layout.places()).map(|(cpus, p)| json!({
                "cpus": cpus.to_string(), "kind": format!("{:?}", p.kind).to_lowercase(), "node": p.node,
            })).collect::<Vec<_>>(),
            "memory_follows_s": places.kernel_moves_memory.map(|after| after.as_secs_f64()),
            "thread_memory_moves": real_nodes && faults.is_ok(),
            "probes": {
                "auto": auto.to_string(),
                "useful": sampling.is_ok(),
                "useful_note": sampling.as_ref().err(),
                "instructions": instructions.is_ok(),
                "instructions_note": instructions.as_ref().err(),
                "page_faults": faults.is_ok(),
                "page_faults_note": faults.as_ref().err(),
                "schedstat": schedstat,
                "io": io,
                "proc_stat": proc_stat,
                "heartbeat_dir": heartbeat_dir,
                "preload_library": preload.as_ref().ok().map(|p| p.display().to_string()),
                "preload_note": preload.as_ref().err().map(ToString::to_string),
            },
        });
        output
            .write(&serde_json::to_string_pretty(&report).expect("json"))
            .map_err(crate::failure::Failure::Runtime)?;
        if output.is_stdout() {
            return Ok(());
        }
    }
    println!("{}", topology.describe());
    if args.topology.is_none() {
        println!("allowed CPUs (this process): {allowed}");
    }
    let names: Vec<String> = places
        .cpus
        .iter()
        .zip(places.layout.places())
        .map(|(cpus, p)| {
            format!(
                "{cpus}{}",
                match p.kind {
                    pinlearn_policy::PlaceKind::Core => "",
                    _ => "*",
                }
            )
        })
        .collect();
    println!(
        "places a thread may be given ({}; * = the OS balances inside): {}",
        names.len(),
        names.join("  ")
    );
    if places.layout.nodes() > 1 {
        match places.kernel_moves_memory {
            Some(after) => println!(
                "memory: the kernel's NUMA balancing is on; the learner takes a thread's memory to follow it after {} of work on another node (memory_follows)",
                pinlearn_engine::format_duration(after)
            ),
            None => println!(
                "memory: the learner takes it to stay where a thread first touched it ({})",
                if args.topology.is_some() {
                    "a given topology has no kernel to ask"
                } else {
                    "kernel.numa_balancing is off, or the nodes are groups of CPUs"
                }
            ),
        }
    }
    if real_nodes {
        match &faults {
            Ok(()) => println!(
                "threads' memory: pinlearn moves the pages a thread first touched to the node it keeps the thread on (move_thread_memory), \
                 and reads where a few of them are: a tie on run time goes to the placement that keeps them nearer their threads"
            ),
            Err(why) => println!("threads' memory: stays where first touched: {why}"),
        }
    }
    println!("speed sources (--metric auto takes {auto} here):");
    match &sampling {
        Ok(()) => println!(
            "  useful        yes (CPU-clock samples, waiting code told from work; spin loops found by instruction: {})",
            match pinlearn_engine::live::Isa::native() {
                Some(isa) => isa.name(),
                None => "not on this instruction set",
            }
        ),
        Err(why) => println!("  useful        no: {why}"),
    }
    match &instructions {
        Ok(()) => println!("  instructions  yes (perf_event_open)"),
        Err(why) => println!("  instructions  no: {why}"),
    }
    println!(
        "  cpu           {} (/proc/PID/task/TID/schedstat)",
        if schedstat { "yes" } else { "no" }
    );
    println!(
        "  io            {} (/proc/PID/task/TID/io)",
        if io { "yes" } else { "no" }
    );
    println!("  heartbeat     yes, for programs that report (channel files in {heartbeat_dir})");
    match &preload {
        Ok(path) => println!(
            "                and from OpenMP regions and barriers with run --preload heartbeats ({})",
            path.display()
        ),
        Err(why) => println!("                not from unmodified programs: {why}"),
    }
    println!(
        "other programs' share of the CPUs: {} (/proc/stat, a second at a time)",
        if proc_stat { "yes" } else { "no" }
    );
    if !real_nodes {
        println!("threads' memory away from their node: not here (one memory node, or nodes that are groups of CPUs)");
    }
    Ok(())
}
