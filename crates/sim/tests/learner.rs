//! The default learner (crowd moves) at the papers' scale (2 nodes of 14
//! cores, 40 threads), against the modelled OS and the round-robin pin: in
//! every cell of the four workloads' matrices it must not lose more than 2%
//! to the OS, where the OS is blind it must come close to the pin (and
//! where the model has the OS share the cores out, the pin must not beat
//! it), and the previous default (the automata's draws) must keep within
//! 1% of the OS where every thread has a core. The programs report nothing
//! (no heartbeats, `WorkloadSpec::heartbeats` off): the guard sees what
//! their threads' CPU time shows, as with an unmodified program.
//! Deterministic (seeded); the tables over several seeds and machines are
//! in docs/simulator.md.

use pinlearn_engine::{Metric, PolicyChoice, Settings};
use pinlearn_experiment::{LoadSession, Scenario, Scheduler};
use pinlearn_policy::Moves;
use pinlearn_sim::{Experiment, MachineParams, Plan, SimMetric, WorkloadKind, WorkloadSpec, run_plan};
use pinlearn_topology::Topology;

mod common;
use common::completion;

fn papers_machine(kind: WorkloadKind, load_session: LoadSession) -> Experiment {
    let settings = Settings::default();
    assert_eq!(settings.learn.moves, Moves::Crowd, "crowd moves are the default");
    Experiment {
        topology: Topology::from_synthetic("node:2 core:14 pu:1").unwrap(),
        workload: WorkloadSpec {
            kind,
            threads: 40,
            duration_s: 60.0,
            ..WorkloadSpec::default()
        },
        params: MachineParams {
            metric: SimMetric::from(Metric::Auto),
            load_session,
            ..MachineParams::default()
        },
        settings,
        // What `pinlearn sim` takes by default: two CPU hogs on a loaded
        // core in the program's session, one session of weight 1 in its own.
        background_weight: match load_session {
            LoadSession::Same => 2.0,
            LoadSession::Own => 1.0,
        },
    }
}

#[test]
fn on_the_papers_machine_the_learner_keeps_within_two_percent_of_the_os_in_every_cell() {
    // The whole matrix (A.1 ... C.3 and D) of the four workloads, with
    // another user's job as the load (its own session, as `pinlearn bench`
    // loads) and with the load in the program's session, seed 1: learn
    // within 2% of the OS in every cell, whoever is right there. (Until
    // 2026-11-28 one cell was left out: blocking barriers beside two hogs
    // a loaded core in the program's session, the load moving (D), 1.077;
    // docs/simulator.md, "Linux gets windows to rebalance after the load
    // moved".) The papers' learner (configs/papers-learner.toml) missed 54
    // of the 80 (2026-11-28, with the programs' progress reported).
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut misses = Vec::new();
    for session in [LoadSession::Own, LoadSession::Same] {
        for kind in [
            WorkloadKind::Barrier,
            WorkloadKind::BarrierSpin,
            WorkloadKind::Independent,
            WorkloadKind::Pipeline,
        ] {
            // The runs `pinlearn sim --matrix full --seeds 1 --schedulers
            // os,learn` makes, in its run order: per scenario, os then learn.
            let plan = Plan {
                experiment: papers_machine(kind, session),
                scenarios: Scenario::full_matrix(),
                schedulers: vec![
                    Scheduler::policy(PolicyChoice::Os),
                    Scheduler::policy(PolicyChoice::Learn),
                ],
                seeds: vec![1],
                plot_scenario: None,
                trace: None,
            };
            let runs = run_plan(&plan, jobs, false).unwrap();
            for (scenario, pair) in plan.scenarios.iter().zip(runs.chunks(2)) {
                let scenario = scenario.to_string();
                let [os, learn] = [&pair[0], &pair[1]].map(|run| run.record.completion_s.expect("the run completes"));
                if learn > 1.02 * os {
                    misses.push(format!(
                        "{kind:?} {scenario} ({session:?} session): learn {learn:.1} s, os {os:.1} s"
                    ));
                }
            }
        }
    }
    assert!(
        misses.is_empty(),
        "learn above 1.02x os in {} cells: {misses:#?}",
        misses.len()
    );
}

#[test]
fn at_256_cores_probes_of_a_pin_far_worse_than_linux_cost_under_two_percent() {
    // 256 threads spinning at barriers on 8 x 32 cores, another user's job
    // moving from node to node (D): the round-robin pin is 4.35x slower
    // than Linux, and each of the learner's probes, held for `max_gap` once
    // two lost, replays it. Whole, they cost 2.7% (1.027 of Linux); ended
    // after two scored periods below half of Linux, 1.0198 (seed 1).
    let mut experiment = papers_machine(WorkloadKind::BarrierSpin, LoadSession::Own);
    experiment.topology = Topology::from_synthetic("node:8 core:32 pu:1").unwrap();
    experiment.workload.threads = 256;
    let os = completion(&experiment, "D", PolicyChoice::Os);
    let learn = completion(&experiment, "D", PolicyChoice::Learn);
    assert!(learn <= 1.02 * os, "learn {learn:.2} s, os {os:.2} s");
}

#[test]
fn with_the_learner_first_the_pin_s_memory_placement_is_kept() {
    // Another user's job on one node at a time (D): Linux keeps the threads
    // off the loaded node from the start, so they touch their memory on the
    // others, and the default learner, pinning later, finds it there (0.64
    // of Linux's time against the pin's 0.51) where memory stays where it
    // was first touched (`move_thread_memory` off; with it, as by default,
    // its memory follows it: 67.9 s against the pin's 66.3 s). Placing first
    // (configs/learner-first.toml), with the round-robin pin (one core of
    // each node in turn), it keeps the pin's memory placement and its lead.
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/learner-first.toml");
    let mut experiment = papers_machine(WorkloadKind::Barrier, LoadSession::Own);
    let mut memory_stays = experiment.clone();
    memory_stays.settings.move_thread_memory = false;
    let default = completion(&memory_stays, "D", PolicyChoice::Learn);
    experiment.settings = Settings::from_toml_file(std::path::Path::new(config)).unwrap();
    let os = completion(&experiment, "D", PolicyChoice::Os);
    let pin = completion(&experiment, "D", PolicyChoice::Static);
    let first = completion(&experiment, "D", PolicyChoice::Learn);
    assert!(pin < 0.85 * os, "the pin wins here: pin {pin:.1} s, os {os:.1} s");
    assert!(
        default > 1.1 * pin,
        "the default learner, memory staying, trails the pin: {default:.1} s, pin {pin:.1} s"
    );
    assert!(
        first <= 1.03 * pin,
        "learner first {first:.1} s, pin {pin:.1} s, os {os:.1} s"
    );
}

#[test]
fn where_the_os_shares_the_cores_out_the_pin_does_not_beat_it() {
    // The model's side of the test above: cells where the modelled OS beats
    // the round-robin pin or ties it (threads that outnumber the free cores,
    // independent work beside a load). `Barrier` A.1 and B.1 left the list
    // when barrier rounds began to vary (2026-11-27): the pin beats the OS
    // there now, whose wake-ups move threads about at every round.
    let cases = [
        (WorkloadKind::Barrier, LoadSession::Same, "C.1"),
        (WorkloadKind::Barrier, LoadSession::Same, "C.2"),
        (WorkloadKind::BarrierSpin, LoadSession::Same, "A.3"),
        (WorkloadKind::Independent, LoadSession::Same, "A.3"),
        (WorkloadKind::Independent, LoadSession::Same, "C.1"),
        (WorkloadKind::Independent, LoadSession::Same, "C.2"),
        (WorkloadKind::Independent, LoadSession::Same, "C.3"),
        (WorkloadKind::Independent, LoadSession::Own, "B.2"),
        (WorkloadKind::Independent, LoadSession::Own, "C.2"),
    ];
    for (kind, session, scenario) in cases {
        let experiment = papers_machine(kind, session);
        let os = completion(&experiment, scenario, PolicyChoice::Os);
        let pin = completion(&experiment, scenario, PolicyChoice::Static);
        assert!(
            os <= 1.01 * pin,
            "{kind:?} {scenario} ({session:?} session): os {os:.1} s, pin {pin:.1} s"
        );
    }
}

#[test]
fn both_kinds_of_moves_keep_within_one_percent_of_the_os_where_every_thread_has_a_core() {
    // One thread per core or fewer, no load: the OS is right, and the
    // learner, crowd moves (the default) or drawn (the default until
    // 2026-11-25), pays only for its probes, which start every thread on
    // the node Linux had it on, beside its memory (the round-robin start
    // took about half of them to the other node: 2.0-2.6% slower than the
    // OS in these cells with drawn moves).
    for moves in [Moves::Crowd, Moves::Drawn] {
        for kind in [WorkloadKind::Independent, WorkloadKind::Pipeline] {
            let mut experiment = papers_machine(kind, LoadSession::Same);
            experiment.settings.learn.moves = moves;
            experiment.settings.learn.reset_on_exit = moves == Moves::Drawn;
            for scenario in ["A.1", "B.1"] {
                let os = completion(&experiment, scenario, PolicyChoice::Os);
                let learn = completion(&experiment, scenario, PolicyChoice::Learn);
                assert!(
                    learn <= 1.01 * os,
                    "{moves:?} {kind:?} {scenario}: learn {learn:.1} s, os {os:.1} s"
                );
            }
        }
    }
}

#[test]
fn where_the_os_is_blind_the_learner_comes_close_to_the_pin() {
    // Blocking barriers next to another session's job on half of every
    // node's cores: the modelled OS crowds the free cores (120 s), the
    // round-robin pin keeps two threads per core (67 s).
    let experiment = papers_machine(WorkloadKind::Barrier, LoadSession::Own);
    for scenario in ["A.2", "B.2", "B.3"] {
        let os = completion(&experiment, scenario, PolicyChoice::Os);
        let pin = completion(&experiment, scenario, PolicyChoice::Static);
        let learn = completion(&experiment, scenario, PolicyChoice::Learn);
        assert!(
            pin < 0.85 * os,
            "{scenario}: the OS is blind here: pin {pin:.1} s, os {os:.1} s"
        );
        assert!(
            learn <= 1.05 * pin,
            "{scenario}: learn {learn:.1} s, pin {pin:.1} s, os {os:.1} s"
        );
    }
}

#[test]
fn where_the_kernel_brings_memory_after_threads_the_learner_lets_them_stay() {
    // The load moves between the nodes (D) beside blocking barriers, and
    // the kernel's NUMA balancing brings a thread's memory to the node it
    // works on after 2 s. Linux first put every thread on the node the
    // load spared, so their memory is there; the learner spreads them over
    // both nodes. Told that memory follows (`memory_follows = "auto"` on a
    // machine that balances), its NUMA level stops pulling the spread
    // threads back to where their memory was, onto cores already shared.
    // Those pulls were the papers' experiments (ζ = 0.02): with pinlearn's
    // ζ = 0 nobody is pulled, and both finish within 5% of the pin.
    let mut experiment = papers_machine(WorkloadKind::Barrier, LoadSession::Own);
    experiment.params.numa_balancing_s = Some(2.0);
    let pin = completion(&experiment, "D", PolicyChoice::Static);
    for memory_follows in ["auto", "never"] {
        let mut by_default = experiment.clone();
        by_default.settings.memory_follows = memory_follows.parse().unwrap();
        let learn = completion(&by_default, "D", PolicyChoice::Learn);
        assert!(
            learn <= 1.05 * pin,
            "memory_follows {memory_follows}: learn {learn:.1} s, pin {pin:.1} s"
        );
    }
    experiment.settings.learn.numa.zeta = 0.02;
    let os = completion(&experiment, "D", PolicyChoice::Os);
    let follows = completion(&experiment, "D", PolicyChoice::Learn);
    experiment.settings.memory_follows = "never".parse().unwrap();
    let stays = completion(&experiment, "D", PolicyChoice::Learn);
    assert!(pin < 0.6 * os, "the OS is blind here: pin {pin:.1} s, os {os:.1} s");
    assert!(
        follows <= 1.05 * pin && follows < 0.75 * stays,
        "learn {follows:.1} s (memory assumed to stay: {stays:.1} s), pin {pin:.1} s, os {os:.1} s"
    );
}

#[test]
fn where_the_load_moves_between_nodes_satisfied_threads_do_not_experiment_away() {
    // Blocking barriers beside another session's job that moves from node
    // to node (D): the learner spreads the threads over both nodes as the
    // pin does. With the papers' ζ = 0.02 of experimentation, a satisfied
    // thread moved to the other node every few NUMA periods, onto cores
    // already shared, and set everybody's pace (learn 0.84 of os, the pin
    // 0.51); pinlearn's ζ = 0 leaves the spread alone (0.63).
    let experiment = papers_machine(WorkloadKind::Barrier, LoadSession::Own);
    assert_eq!(experiment.settings.learn.numa.zeta, 0.0);
    let os = completion(&experiment, "D", PolicyChoice::Os);
    let pin = completion(&experiment, "D", PolicyChoice::Static);
    let learn = completion(&experiment, "D", PolicyChoice::Learn);
    assert!(pin < 0.6 * os, "the OS is blind here: pin {pin:.1} s, os {os:.1} s");
    assert!(learn < 0.7 * os, "learn {learn:.1} s, pin {pin:.1} s, os {os:.1} s");
    let mut experimenting = experiment.clone();
    experimenting.settings.learn.numa.zeta = 0.02;
    let experimented = completion(&experimenting, "D", PolicyChoice::Learn);
    assert!(
        learn < 0.85 * experimented,
        "learn {learn:.1} s, with ζ = 0.02 {experimented:.1} s"
    );
}

#[test]
fn beside_another_session_threads_that_sleep_between_rounds_share_its_cores() {
    // Another session's job on half of every node's cores. Two threads that
    // sleep at every round take 0.9 of such a core (wake-up preemption),
    // one alone its group's half: the crowd told of the wake-ups leaves
    // the free cores' threes for the loaded cores' ones (before: blocking
    // barriers C.2 120.9 s, the pipeline B.2 83.1 s against the pin's 65.6).
    let barrier = papers_machine(WorkloadKind::Barrier, LoadSession::Own);
    let os = completion(&barrier, "C.2", PolicyChoice::Os);
    let learn = completion(&barrier, "C.2", PolicyChoice::Learn);
    assert!(learn <= 0.9 * os, "barrier C.2: learn {learn:.1} s, os {os:.1} s");
    let pipeline = papers_machine(WorkloadKind::Pipeline, LoadSession::Own);
    let pin = completion(&pipeline, "B.2", PolicyChoice::Static);
    let learn = completion(&pipeline, "B.2", PolicyChoice::Learn);
    assert!(learn <= 1.02 * pin, "pipeline B.2: learn {learn:.1} s, pin {pin:.1} s");
}

#[test]
fn where_a_pipeline_pools_its_work_threads_go_to_loaded_cores_for_the_program() {
    // One stage thread per core, cores in turn loaded by another session
    // (C.2). A thread alone on a loaded core gets less than a crowded free
    // core gives it, so none goes there for itself and the program leaves
    // those cores unused. Its threads' CPU time follows their run shares
    // (a pool, not a barrier), so a thread is sent where the program gains:
    // 77.1 s, against 86.3 s without pooled moves and the pin's 80.0 s
    // (`pinlearn sim --scenarios C.2 --seeds 1 --workload pipeline
    // --load-session own`, with and without configs/pooled-moves-off.toml).
    let pipeline = papers_machine(WorkloadKind::Pipeline, LoadSession::Own);
    let pin = completion(&pipeline, "C.2", PolicyChoice::Static);
    let learn = completion(&pipeline, "C.2", PolicyChoice::Learn);
    let mut selfish = pipeline.clone();
    selfish.settings.learn.crowd.pooled_moves = false;
    let selfish = completion(&selfish, "C.2", PolicyChoice::Learn);
    assert!(
        learn <= pin && learn < 0.95 * selfish,
        "learn {learn:.1} s, without pooled moves {selfish:.1} s, the pin {pin:.1} s"
    );
    // Threads that meet at barriers are no pool: the same cell of blocking
    // barriers runs as with pooled moves off.
    let barrier = papers_machine(WorkloadKind::Barrier, LoadSession::Own);
    let learn = completion(&barrier, "C.2", PolicyChoice::Learn);
    let mut selfish = barrier.clone();
    selfish.settings.learn.crowd.pooled_moves = false;
    assert_eq!(learn, completion(&selfish, "C.2", PolicyChoice::Learn), "barrier C.2");
}

#[test]
fn where_pinlearn_moves_threads_memory_after_them_the_learner_comes_close_to_the_pin() {
    // Blocking barriers beside another session's job that moves from node
    // to node (D), memory staying where it was first touched (no NUMA
    // balancing): Linux places every thread for the first 0.3 s and they
    // touch their memory there; the learner's first probe spreads them as
    // the pin does, and half of them run remote from then on unless their
    // memory follows them (`move_thread_memory`, on by default).
    let experiment = papers_machine(WorkloadKind::Barrier, LoadSession::Own);
    assert!(experiment.settings.move_thread_memory, "on by default");
    let pin = completion(&experiment, "D", PolicyChoice::Static);
    let follows = completion(&experiment, "D", PolicyChoice::Learn);
    let mut stays_experiment = experiment.clone();
    stays_experiment.settings.move_thread_memory = false;
    let stays = completion(&stays_experiment, "D", PolicyChoice::Learn);
    assert!(
        follows <= 1.05 * pin && stays > 1.15 * pin,
        "learn {follows:.1} s (memory left behind: {stays:.1} s), pin {pin:.1} s"
    );
}

#[test]
fn spinning_threads_beside_a_load_in_their_group_double_up_where_it_leaves_the_cores_free() {
    // Forty threads that spin 200 us at each barrier before they sleep, one
    // a core with twelve cores doubled (C), beside two hogs a core in the
    // program's session on half of every node's cores. The round-robin pin
    // doubles threads on cores 0-11, seven of them loaded (1.26x Linux at
    // C.3); the learner deals them to the cores the other programs leave
    // free first (before: it held the pin's places, 0.93x Linux at C.3 and
    // 0.91x at C.2, where the load's best fixed pin takes 0.69x and 1.02x).
    let mut experiment = papers_machine(WorkloadKind::BarrierSpin, LoadSession::Same);
    experiment.workload.spin_s = Some(200e-6);
    experiment.workload.grain_s = Some(0.2e-3);
    for scenario in ["C.2", "C.3"] {
        let os = completion(&experiment, scenario, PolicyChoice::Os);
        let learn = completion(&experiment, scenario, PolicyChoice::Learn);
        assert!(learn <= 0.75 * os, "{scenario}: learn {learn:.1} s, os {os:.1} s");
    }
    // With the load in its own session, Linux gives the program's group half
    // of a loaded core and its waking threads more: the pin's places stay.
    let mut own = papers_machine(WorkloadKind::BarrierSpin, LoadSession::Own);
    own.workload.spin_s = Some(200e-6);
    own.workload.grain_s = Some(0.2e-3);
    let pin = completion(&own, "C.2", PolicyChoice::Static);
    let learn = completion(&own, "C.2", PolicyChoice::Learn);
    assert!(
        learn <= 1.02 * pin,
        "own session C.2: learn {learn:.1} s, pin {pin:.1} s"
    );
}

#[test]
fn where_linux_leaves_threads_away_from_their_memory_a_tie_in_run_time_goes_to_the_learner() {
    // Four threads a core on ten cores of four nodes of eight (A.1, no
    // load): Linux keeps every core busy by moving threads across nodes,
    // away from the memory they first touched, so their run time matches
    // the pin's while their work is slower. Blocking barriers: Linux 71.9 s,
    // the learner 60.1 (it starts the threads on their memory's nodes where
    // it can, `swap_toward_homes`; 63.9 before that and the tie rule; 61.1
    // with ties given from 0.1 more memory away, not 0.05: Linux's windows
    // left 0.08 of it away, the learner's 0.01). Threads that spin 200 us
    // before they sleep: the learner's windows tie Linux's on run time, its
    // threads' memory follows them and Linux's stays behind (`remote`): the
    // tie goes to the learner, and Linux's probes back off (104.5 s; 115.2
    // without, `remote_gap = 1`; Linux 126.5). The target where
    // Linux is blind: 15% faster than it.
    let mut experiment = papers_machine(WorkloadKind::Barrier, LoadSession::Own);
    experiment.topology = Topology::from_synthetic("node:4 core:8 pu:1").unwrap();
    let os = completion(&experiment, "A.1", PolicyChoice::Os);
    let learn = completion(&experiment, "A.1", PolicyChoice::Learn);
    assert!(learn <= 0.85 * os, "blocking: learn {learn:.1} s, os {os:.1} s");
    let mut spinning = experiment.clone();
    spinning.workload.kind = WorkloadKind::BarrierSpin;
    spinning.workload.spin_s = Some(200e-6);
    spinning.workload.grain_s = Some(0.2e-3);
    let os = completion(&spinning, "A.1", PolicyChoice::Os);
    let learn = completion(&spinning, "A.1", PolicyChoice::Learn);
    let mut blind = spinning.clone();
    blind.settings.learn.guard.remote_gap = 1.0;
    let without = completion(&blind, "A.1", PolicyChoice::Learn);
    assert!(
        learn <= 0.85 * os && learn <= 0.95 * without,
        "spinning: learn {learn:.1} s (ties not given by memory: {without:.1} s), os {os:.1} s"
    );
}
