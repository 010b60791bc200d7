//! Bubbles in the simulator: the heat workload on the bubbles paper's
//! machine (4 nodes of 4 cores, remote memory 3x slower), one bubble per
//! node declared by the workload, against the hand-made pinning (thread i
//! on core i: `static`) and the modelled OS; fib, whose threads are
//! created during the run. Deterministic (seeded).

use pinlearn_engine::{PolicyChoice, Settings};
use pinlearn_sim::{Experiment, MachineParams, WorkloadKind, WorkloadSpec};
use pinlearn_topology::Topology;

mod common;
use common::{completion, median_completion};

fn heat(numa_factor: f64) -> Experiment {
    Experiment {
        topology: Topology::from_synthetic("node:4 core:4 pu:1").unwrap(),
        workload: WorkloadSpec {
            kind: WorkloadKind::Heat,
            threads: 16,
            duration_s: 30.0,
            memory_intensity: 1.0,
            ..WorkloadSpec::default()
        },
        params: MachineParams {
            numa_factor,
            ..MachineParams::default()
        },
        settings: Settings::default(),
        background_weight: 2.0,
    }
}

#[test]
fn heat_bubbles_match_the_hand_made_pinning_and_beat_the_os_where_threads_share_cores() {
    let experiment = heat(3.0);
    // One thread per core: bubbles place like the hand-made pinning.
    let (bound, bubbles) = (
        completion(&experiment, "C.1", PolicyChoice::Static),
        completion(&experiment, "C.1", PolicyChoice::Bubbles),
    );
    assert!(bubbles <= bound * 1.02, "C.1: bubbles {bubbles} s, bound {bound} s");
    // Four threads per core: the OS balancer moves threads away from their
    // memory; bubbles keep each on its node.
    let (os, bubbles) = (
        completion(&experiment, "A.1", PolicyChoice::Os),
        completion(&experiment, "A.1", PolicyChoice::Bubbles),
    );
    assert!(os >= 1.3 * bubbles, "A.1: os {os} s, bubbles {bubbles} s");
}

#[test]
fn without_remote_memory_cost_heat_bubbles_equal_the_os_on_idle_cores() {
    let experiment = heat(1.0);
    for scenario in ["C.1", "A.1", "B.1"] {
        let (os, bubbles) = (
            completion(&experiment, scenario, PolicyChoice::Os),
            completion(&experiment, scenario, PolicyChoice::Bubbles),
        );
        assert!(bubbles <= os * 1.02, "{scenario}: bubbles {bubbles} s, os {os} s");
    }
}

/// fib with `leaves` leaves on the paper's machine, remote memory cost `F`.
fn fib(leaves: usize, numa_factor: f64) -> Experiment {
    Experiment {
        workload: WorkloadSpec {
            kind: WorkloadKind::Fib,
            threads: leaves,
            ..heat(numa_factor).workload
        },
        ..heat(numa_factor)
    }
}

#[test]
fn fib_threads_are_created_during_the_run_and_every_scheduler_finishes_it() {
    // 16 leaves on 16 idle cores, no remote cost: Linux's fork balancing
    // puts every new thread on an idle core, so the run takes the largest
    // leaf's time (the work is sized to 30 s).
    let experiment = fib(16, 1.0);
    let os = completion(&experiment, "C.1", PolicyChoice::Os);
    assert!((30.0..30.5).contains(&os), "os {os} s");
    for choice in [
        PolicyChoice::Static,
        PolicyChoice::Bubbles,
        PolicyChoice::BubblesLearn,
        PolicyChoice::Learn,
    ] {
        let time = completion(&experiment, "C.1", choice);
        assert!(time.is_finite() && time >= 30.0, "{choice}: {time} s");
    }
}

#[test]
fn fib_bubbles_keep_leaves_by_their_memory_and_beat_the_os_where_leaves_share_cores() {
    // The program declares its waiting parents at load 0 and wakes each
    // bubble up as it creates it: leaves are placed before they touch
    // memory, and a respread takes one off its node only onto a free CPU.
    let experiment = fib(16, 3.0);
    let (os, bubbles) = (
        completion(&experiment, "C.1", PolicyChoice::Os),
        completion(&experiment, "C.1", PolicyChoice::Bubbles),
    );
    assert!(
        bubbles <= os * 1.02,
        "C.1 (a core per leaf): bubbles {bubbles} s, os {os} s"
    );
    // Two leaves per core, no load: Linux's fork balancing crowds some
    // nodes; its turns within a node repair that in some seeds (os 38-43 s
    // in 4 of 10), never across nodes (80-84 s in the others).
    let (os, bubbles) = (
        median_completion(&experiment, "B.1", PolicyChoice::Os, 10),
        median_completion(&experiment, "B.1", PolicyChoice::Bubbles, 10),
    );
    assert!(
        os >= 1.3 * bubbles,
        "B.1 (two leaves per core), medians of 10 seeds: os {os} s, bubbles {bubbles} s"
    );
    let (os, bubbles) = (
        completion(&experiment, "C.2", PolicyChoice::Os),
        completion(&experiment, "C.2", PolicyChoice::Bubbles),
    );
    assert!(
        os >= 1.3 * bubbles,
        "C.2 (half the cores loaded): os {os} s, bubbles {bubbles} s"
    );
}

#[test]
fn fib_leaves_leave_their_memory_only_where_sharing_costs_more_than_remote_memory() {
    // 32 leaves on 8 cores of the four nodes (four per core). As a node's
    // leaves end, a respread may move leaves of a crowded node onto its
    // free CPUs, where they run 3x slower away from their memory. The
    // modelled machine's NUMA distances say 3: a leaf moves only from a
    // node with 3 or more leaves per CPU. Before, any node over its CPUs
    // gave leaves away, and bubbles took 42% longer than the OS. Medians of
    // 10 seeds: the OS's time here spreads from 38 s to 83 s with the seed.
    let experiment = fib(32, 3.0);
    let (os, bubbles) = (
        median_completion(&experiment, "A.1", PolicyChoice::Os, 10),
        median_completion(&experiment, "A.1", PolicyChoice::Bubbles, 10),
    );
    assert!(
        bubbles <= os,
        "A.1 (four leaves per core): bubbles {bubbles} s, os {os} s"
    );
    // Assuming remote memory costs nothing moves leaves away from their
    // memory where other programs load half the cores (D): 32% longer,
    // where memory stays where it was first touched. (At A.1 it no longer
    // does since a bubble no child can hold stays whole unless it is more
    // than its share. With `move_thread_memory` on, a moved leaf's memory
    // follows it and the careless spread costs 0.5%: 47.9 s against 47.7 s.)
    let stays = |remote_cost| Experiment {
        settings: Settings {
            remote_cost,
            move_thread_memory: false,
            ..Settings::default()
        },
        ..fib(32, 3.0)
    };
    let (experiment, careless) = (stays(None), stays(Some(1.0)));
    let kept = median_completion(&experiment, "D", PolicyChoice::Bubbles, 10);
    let moved = median_completion(&careless, "D", PolicyChoice::Bubbles, 10);
    assert!(
        moved >= 1.25 * kept,
        "D, remote_cost 1: bubbles {moved} s, remote cost 3: {kept} s"
    );
}
