//! The simulator's laws, checked through its public API: conservation,
//! speeds, the workloads, the modelled OS, and the engine driving it.

use pinlearn_engine::{Engine, Places, Target};
use pinlearn_policy::{
    CrowdConfig, GuardConfig, LearnConfig, LearnPolicy, Objective, OsPolicy, StaticPolicy, ThreadSample,
};
use pinlearn_sim::{
    Activity, BackgroundSchedule, LoadGame, MachineParams, SimMachine, SimMetric, WorkloadKind, WorkloadSpec,
};
use pinlearn_topology::{CpuSet, Topology};

fn places(spec: &str) -> Places {
    Places::new(&Topology::from_synthetic(spec).expect("valid synthetic topology"))
}

fn spec(kind: WorkloadKind, threads: usize, duration_s: f64) -> WorkloadSpec {
    WorkloadSpec {
        kind,
        threads,
        weights: vec![1.0],
        duration_s,
        spin_s: None,
        stages: vec![2.0, 1.0, 1.0],
        queue_capacity: 64,
        memory_intensity: 0.0,
        ..WorkloadSpec::default()
    }
}

/// No measurement noise, and barrier rounds exactly alike, so that times
/// and speeds can be worked out by hand.
fn exact(metric: SimMetric) -> MachineParams {
    MachineParams {
        noise: 0.0,
        round_jitter: 0.0,
        metric,
        ..MachineParams::default()
    }
}

fn observe(machine: &mut SimMachine) -> Vec<ThreadSample> {
    let mut samples = Vec::new();
    machine
        .observe(&mut samples)
        .expect("the simulator never fails to observe");
    samples
}

/// Pins thread `index` (key index + 1) to core place `place`.
fn pin(machine: &mut SimMachine, index: usize, place: usize) {
    assert!(machine.place(index as u64 + 1, place, &CpuSet::new()).unwrap());
}

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance * b.abs().max(1.0)
}

#[test]
fn no_core_gives_more_than_its_capacity_in_any_step() {
    let places = places("node:2 core:2 pu:1");
    let mut workload = spec(WorkloadKind::BarrierSpin, 7, 1.0);
    workload.weights = vec![1.0, 2.0, 1.0, 3.0, 1.0, 1.0, 2.0];
    workload.spin_s = Some(0.005);
    workload.memory_intensity = 0.5;
    let background = BackgroundSchedule::new(vec![
        (0.0, vec![0.0, 2.0, 0.0, 0.0]),
        (0.3, vec![1.0, 0.0, 0.5, 3.0]),
        (0.9, vec![0.0; 4]),
    ]);
    let mut machine = SimMachine::new(&places, &workload, background, MachineParams::default(), 3);
    let capacity = vec![1.0, 0.5, 1.0, 2.0];
    machine.set_capacities(capacity.clone());
    let mut engine = Engine::new(Box::new(OsPolicy::new(places.layout.clone())), places, 1, None);
    let step = 0.001;
    let mut given_before = [0.0; 4];
    let mut k = 0u32;
    while machine.completion().is_none() && k < 5000 {
        if k.is_multiple_of(50) {
            let now = machine.now();
            engine.step(&mut machine, now).unwrap();
            for sample in machine.last_samples() {
                if let Some(speed) = sample.speed {
                    assert!(speed <= 2.0 + 1e-9, "a cpu speed above the fastest core: {speed}");
                }
            }
        }
        let before = machine.now();
        k += 1;
        machine.advance_to(f64::from(k) * step);
        let elapsed = machine.now() - before;
        let (app, background) = machine.cpu_given();
        for core in 0..4 {
            let given = app[core] + background[core];
            let delta = given - given_before[core];
            assert!(
                delta <= capacity[core] * elapsed * (1.0 + 1e-9) + 1e-12,
                "core {core} gave {delta} in {elapsed} s with capacity {}",
                capacity[core]
            );
            given_before[core] = given;
        }
    }
    assert!(machine.completion().is_some(), "the program finishes");
    assert!(machine.totals().balancer_moves > 0, "the OS model had work to do");
}

#[test]
fn speeds_fall_when_load_rises() {
    let places = places("node:1 core:2 pu:1");
    // No load until 1 s, a background program of weight 1 on core 0 from 1 s.
    let background = BackgroundSchedule::new(vec![(0.0, vec![0.0, 0.0]), (1.0, vec![1.0, 0.0])]);
    for metric in [SimMetric::Cpu, SimMetric::Heartbeat, SimMetric::Instructions] {
        let workload = spec(WorkloadKind::Independent, 2, 100.0);
        let mut machine = SimMachine::new(&places, &workload, background.clone(), exact(metric), 1);
        observe(&mut machine);
        pin(&mut machine, 0, 0);
        pin(&mut machine, 1, 1);
        let mut speeds = Vec::new();
        // Alone, then with the background (from 1 s), then with the other thread too.
        for (settle, measure) in [(0.5, 0.9), (1.5, 1.9), (2.5, 2.9)] {
            if settle > 2.0 {
                pin(&mut machine, 1, 0);
            }
            machine.advance_to(settle);
            observe(&mut machine);
            machine.advance_to(measure);
            speeds.push(observe(&mut machine)[0].speed.unwrap());
        }
        assert!(close(speeds[0], 1.0, 1e-9), "{metric:?}: alone {speeds:?}");
        assert!(
            close(speeds[1], 0.5, 1e-9),
            "{metric:?}: with a load of weight 1 {speeds:?}"
        );
        assert!(
            close(speeds[2], 1.0 / 3.0, 1e-9),
            "{metric:?}: plus a thread {speeds:?}"
        );
    }
}

#[test]
fn work_is_conserved_and_measured_progress_adds_up_to_it() {
    let places = places("node:2 core:2 pu:1");
    let mut workload = spec(WorkloadKind::Independent, 6, 2.0);
    workload.weights = vec![1.0, 2.0, 1.5];
    workload.memory_intensity = 0.8;
    let total_work: f64 = workload.build(4).tasks().iter().map(|t| t.remaining).sum();
    let mut machine = SimMachine::new(
        &places,
        &workload,
        // Node 0 heavily loaded: the OS moves threads to node 1, away from their memory.
        BackgroundSchedule::new(vec![(0.0, vec![3.0, 3.0, 0.0, 0.0])]),
        exact(SimMetric::Heartbeat),
        9,
    );
    let mut engine = Engine::new(Box::new(OsPolicy::new(places.layout.clone())), places, 4, None);
    let period = 0.05;
    let mut measured = 0.0;
    let mut k = 0u32;
    loop {
        engine.step(&mut machine, f64::from(k) * period).unwrap();
        // Heartbeat speeds are work per second over the period just ended.
        measured += machine.last_samples().iter().filter_map(|s| s.speed).sum::<f64>() * period;
        k += 1;
        machine.advance_to(f64::from(k) * period);
        if machine.completion().is_some() {
            break;
        }
    }
    let done = machine.totals().work;
    assert!(close(done, total_work, 1e-9), "work done {done} vs given {total_work}");
    // The last partial period is never observed: at most one period of every thread is missing.
    assert!(
        measured <= done + 1e-9 && measured >= done - 6.0 * period,
        "measured {measured} done {done}"
    );
    let (app, _) = machine.cpu_given();
    let cpu: f64 = app.iter().sum();
    assert!(
        cpu >= done - 1e-9,
        "CPU given {cpu} covers the work {done} (remote memory and migrations cost extra)"
    );
    assert!(
        machine.totals().node_migrations > 0 && cpu > done + 1e-6,
        "the OS moved threads across nodes and remote memory cost CPU"
    );
}

#[test]
fn progress_is_the_work_rate_where_the_program_beats_else_what_its_cpu_time_shows() {
    // Two barrier threads that spin while they wait, one of them on a core
    // shared with a background program. A program that beats reports the
    // work it does per second; one that reports nothing shows only its CPU
    // time: all of it with the `cpu` metric (the spinner's too), the time
    // in working code with `useful` (CPU-clock samples).
    let places = places("node:1 core:2 pu:1");
    let run = |heartbeats: bool, metric: SimMetric| {
        let mut workload = spec(WorkloadKind::BarrierSpin, 2, 2.0);
        workload.spin_s = Some(10.0);
        workload.heartbeats = heartbeats;
        let background = BackgroundSchedule::new(vec![(0.0, vec![1.0, 0.0])]);
        let mut machine = SimMachine::new(&places, &workload, background, exact(metric), 1);
        observe(&mut machine);
        assert_eq!(machine.progress(), None, "nothing measured yet");
        pin(&mut machine, 0, 0);
        pin(&mut machine, 1, 1);
        machine.advance_to(0.5);
        observe(&mut machine);
        let first = (machine.totals().work, machine.progress().unwrap());
        machine.advance_to(1.0);
        observe(&mut machine);
        let second = (machine.totals().work - first.0, machine.progress().unwrap());
        (first, second)
    };
    // Rounds of 0.1 core-seconds per thread last 0.2 s (thread 0 runs at
    // half speed): in 0.5 s thread 0 did 0.25, thread 1 its 2.5 rounds'
    // worth plus the start of the third, 0.3, and spun the rest.
    let ((work, progress), (second, per_period)) = run(true, SimMetric::Cpu);
    assert!(close(work, 0.55, 1e-9), "{work}");
    assert!(close(progress, work / 0.5, 1e-9), "{progress}");
    assert!(close(per_period, second / 0.5, 1e-9), "per period, not cumulative");
    // Half a core and a whole one, spinning or not.
    let ((_, cpu), _) = run(false, SimMetric::Cpu);
    assert!(close(cpu, 1.5, 1e-9), "{cpu}");
    // Without the spin: the work, here where no memory is remote.
    let ((work, useful), _) = run(false, SimMetric::Useful);
    assert!(close(useful, work / 0.5, 1e-9), "{useful}");
    // The `heartbeat` metric is a program that beats.
    let ((work, beats), _) = run(false, SimMetric::Heartbeat);
    assert!(close(beats, work / 0.5, 1e-9), "{beats}");
}

#[test]
fn barrier_rounds_wait_for_the_slowest_thread() {
    let places = places("node:1 core:2 pu:1");
    let workload = spec(WorkloadKind::Barrier, 2, 2.0);
    // Core 0 is shared with a background program of weight 1: its thread runs at half speed.
    let background = BackgroundSchedule::new(vec![(0.0, vec![1.0, 0.0])]);
    let mut machine = SimMachine::new(&places, &workload, background, exact(SimMetric::Cpu), 1);
    observe(&mut machine);
    pin(&mut machine, 0, 0);
    pin(&mut machine, 1, 1);
    machine.advance_to(1.0);
    let cpu = observe(&mut machine);
    // 20 rounds of 0.1 core-seconds; each round lasts 0.2 s because of thread 0.
    assert_eq!(machine.program().rounds_done(), 5);
    assert!(close(cpu[0].speed.unwrap(), 0.5, 1e-9), "{cpu:?}");
    assert!(
        close(cpu[1].speed.unwrap(), 1.0, 1e-9),
        "the fast thread blocks at the barrier: it runs all the time it is runnable {cpu:?}"
    );
    machine.advance_to(10.0);
    assert!(
        close(machine.completion().unwrap(), 4.0, 1e-9),
        "{:?}",
        machine.completion()
    );
    assert_eq!(machine.program().rounds_done(), 20);
}

#[test]
fn spinning_consumes_cpu_without_progress() {
    // Two threads on two cores, each core shared with background load: the
    // thread of core 1 (weight-3 load) is the slow one; the other waits.
    let places = places("node:1 core:2 pu:1");
    let background = BackgroundSchedule::new(vec![(0.0, vec![1.0, 3.0])]);
    let mut results = Vec::new();
    for kind in [WorkloadKind::Barrier, WorkloadKind::BarrierSpin] {
        let mut by_metric = Vec::new();
        for metric in [SimMetric::Heartbeat, SimMetric::Instructions] {
            let workload = spec(kind, 2, 1.0);
            let mut machine = SimMachine::new(&places, &workload, background.clone(), exact(metric), 1);
            observe(&mut machine);
            pin(&mut machine, 0, 0);
            pin(&mut machine, 1, 1);
            machine.advance_to(1.0);
            let speed = observe(&mut machine)[0].speed.unwrap();
            machine.advance_to(100.0);
            let (app, background_cpu) = machine.cpu_given();
            by_metric.push((
                speed,
                app[0],
                background_cpu[0],
                machine.completion().unwrap(),
                machine.totals().work,
            ));
        }
        results.push(by_metric);
    }
    let (block, spin) = (&results[0], &results[1]);
    // Same completion and the same work: spinning made no progress.
    assert!(close(block[0].3, spin[0].3, 1e-9) && close(block[0].4, spin[0].4, 1e-9));
    assert!(
        close(block[0].0, spin[0].0, 1e-9),
        "same progress rate: {block:?} {spin:?}"
    );
    // Blocking, the background gets core 0 while thread 0 waits; spinning, it keeps half.
    assert!(
        spin[0].1 > 1.9 * block[0].1,
        "the spinner took CPU: {spin:?} vs {block:?}"
    );
    assert!(spin[0].2 < block[0].2, "from the background program");
    // Instructions count the spin as speed: half a core all along, while the
    // heartbeat only counts the work; without spinning both agree.
    assert!(close(spin[1].0, 0.5, 1e-9), "instructions {}", spin[1].0);
    assert!(spin[0].0 < 0.35, "heartbeat {}", spin[0].0);
    assert!(close(block[1].0, block[0].0, 1e-9), "{block:?}");
}

#[test]
fn pipeline_throughput_is_the_slowest_stage() {
    for (stages, threads) in [(vec![2.0, 1.0, 1.0], 3), (vec![3.0, 1.0], 5)] {
        let places = places("node:1 core:6 pu:1");
        let mut workload = spec(WorkloadKind::Pipeline, threads, 4.0);
        workload.stages = stages.clone();
        let stage_of = workload.pipeline_stages();
        let mut machine = SimMachine::new(
            &places,
            &workload,
            BackgroundSchedule::idle(6),
            exact(SimMetric::Cpu),
            1,
        );
        let mut engine = Engine::new(Box::new(StaticPolicy::new(places.layout.clone())), places, 1, None);
        engine.step(&mut machine, 0.0).unwrap();
        machine.advance_to(1000.0);
        let completion = machine.completion().unwrap();
        let items = machine.program().items_done() as f64;
        // Per-thread time per item of each stage, scaled so the bottleneck's is 25 ms.
        let per_thread: Vec<f64> = (0..stages.len())
            .map(|s| stages[s] / stage_of.iter().filter(|&&t| t == s).count() as f64)
            .collect();
        let scale = 0.025 / per_thread.iter().copied().fold(0.0, f64::max);
        // One item's trip through every stage: the pipeline's fill and drain.
        let latency: f64 = stages.iter().map(|w| w * scale).sum();
        assert!(
            completion >= items * 0.025 - 1e-9 && completion <= items * 0.025 + latency + 1e-9,
            "{stages:?}: {items} items in {completion} s"
        );
        assert!(close(items, 160.0, 1e-9), "4 s at 40 items/s: {items}");
    }
}

#[test]
fn the_os_model_spreads_equal_threads_evenly() {
    let places = places("node:1 core:4 pu:1");
    let node = places.layout.node_place(0);
    let workload = spec(WorkloadKind::Independent, 8, 100.0);
    let mut machine = SimMachine::new(
        &places,
        &workload,
        BackgroundSchedule::idle(4),
        exact(SimMetric::Cpu),
        2,
    );
    for thread in 0..8 {
        pin(&mut machine, thread, 0);
    }
    machine.advance_to(0.2);
    assert!(machine.thread_cores().iter().all(|&c| c == 0));
    for thread in 0..8 {
        pin(&mut machine, thread, node);
    }
    machine.advance_to(1.0);
    let mut per_core = [0; 4];
    machine.thread_cores().iter().for_each(|&c| per_core[c] += 1);
    assert_eq!(per_core, [2, 2, 2, 2], "balanced");
    let moves = machine.totals().balancer_moves;
    machine.advance_to(3.0);
    assert_eq!(machine.totals().balancer_moves, moves, "and then it leaves them alone");
}

/// The CPU-seconds each of three busy threads free on a node of two cores
/// gets over 20 s under the modelled OS.
fn cpu_of_three_on_two(rotate_after_s: Option<f64>) -> Vec<f64> {
    let places = places("node:1 core:2 pu:1");
    let node = places.layout.node_place(0);
    let workload = spec(WorkloadKind::Independent, 3, 1000.0);
    let params = MachineParams {
        rotate_after_s,
        ..exact(SimMetric::Cpu)
    };
    let mut machine = SimMachine::new(&places, &workload, BackgroundSchedule::idle(2), params, 5);
    for thread in 0..3 {
        pin(&mut machine, thread, node);
    }
    observe(&mut machine);
    let mut cpu = vec![0.0; 3];
    for second in 1..=20 {
        machine.advance_to(f64::from(second));
        for (sum, sample) in cpu.iter_mut().zip(observe(&mut machine)) {
            *sum += sample.speed.unwrap_or(0.0);
        }
    }
    cpu
}

#[test]
fn the_os_model_gives_crowded_cores_in_turns_as_linux_does() {
    // Measured (scripts/busy-loops 3 20): 12.8-13.7 CPU-seconds each.
    let cpu = cpu_of_three_on_two(MachineParams::default().rotate_after_s);
    assert!(close(cpu.iter().sum::<f64>(), 40.0, 0.01), "{cpu:?}");
    for &each in &cpu {
        assert!(close(each, 40.0 / 3.0, 0.08), "each near 13.3 s: {cpu:?}");
    }
    // Without turns one thread keeps a core to itself.
    let mut fixed = cpu_of_three_on_two(None);
    fixed.sort_by(f64::total_cmp);
    assert!(close(fixed[2], 20.0, 0.01) && close(fixed[0], 10.0, 0.01), "{fixed:?}");
}

#[test]
fn numa_balancing_moves_memory_to_where_a_thread_works_and_binding_moves_it_all() {
    let places = places("node:2 core:1 pu:1");
    let core_of_node = |node| places.layout.cores_of(node).next().expect("a core on every node");
    let (home, away) = (core_of_node(0), core_of_node(1));
    let mut workload = spec(WorkloadKind::Independent, 2, 100.0);
    workload.memory_intensity = 1.0;
    let params = MachineParams {
        numa_balancing_s: Some(1.0),
        ..exact(SimMetric::Heartbeat)
    };
    let mut machine = SimMachine::new(&places, &workload, BackgroundSchedule::idle(2), params, 4);
    observe(&mut machine);
    pin(&mut machine, 0, home);
    pin(&mut machine, 1, home);
    machine.advance_to(0.5);
    assert_eq!(machine.memory_node(0), Some(0), "first touched on node 0");
    // 0.5 CPU-seconds on node 1, then 0.1 back home (sharing the core),
    // then 0.5 on node 1 again: 0.9 net, short of the 1 s.
    pin(&mut machine, 0, away);
    machine.advance_to(1.0);
    pin(&mut machine, 0, home);
    machine.advance_to(1.2);
    pin(&mut machine, 0, away);
    machine.advance_to(1.7);
    assert_eq!(machine.memory_node(0), Some(0), "0.9 CPU-seconds net away: not yet");
    observe(&mut machine);
    machine.advance_to(1.9);
    assert_eq!(machine.memory_node(0), Some(1), "its memory followed it");
    assert_eq!(machine.totals().memory_moves, 1);
    observe(&mut machine);
    machine.advance_to(2.4);
    let speed = observe(&mut machine)[0].speed.unwrap();
    assert!(close(speed, 1.0, 1e-9), "local again: full speed, {speed}");
    // Memory binding moves all the process's memory; the threads stay.
    assert!(machine.bind_memory(0, 0).unwrap());
    assert_eq!((machine.memory_node(0), machine.memory_node(1)), (Some(0), Some(0)));
    assert_eq!(machine.totals().memory_moves, 2, "thread 1's memory was there already");
    observe(&mut machine);
    machine.advance_to(2.9);
    let speed = observe(&mut machine)[0].speed.unwrap();
    assert!(close(speed, 0.5, 1e-9), "remote after the binding: {speed}");
    assert!(!machine.bind_memory(7, 0).unwrap(), "no such process");
}

#[test]
fn a_thread_s_memory_moved_after_it_costs_the_copy_once_then_runs_local() {
    let places = places("node:2 core:1 pu:1");
    let core_of_node = |node| places.layout.cores_of(node).next().expect("a core on every node");
    let mut workload = spec(WorkloadKind::Independent, 2, 100.0);
    workload.memory_intensity = 1.0;
    let params = MachineParams {
        thread_memory_move_s: 0.1,
        ..exact(SimMetric::Heartbeat)
    };
    let mut machine = SimMachine::new(&places, &workload, BackgroundSchedule::idle(2), params, 4);
    observe(&mut machine);
    pin(&mut machine, 0, core_of_node(0));
    pin(&mut machine, 1, core_of_node(1));
    machine.advance_to(0.5);
    pin(&mut machine, 0, core_of_node(1));
    pin(&mut machine, 1, core_of_node(0));
    observe(&mut machine);
    machine.advance_to(1.0);
    let speeds = observe(&mut machine);
    let remote = speeds[0].speed.unwrap();
    // Half speed remote (the 1 ms of the node change paid too).
    assert!(close(remote, 0.5, 0.01), "remote: {remote}");
    let key = speeds[0].key;
    assert!(
        !machine.move_thread_memory(key, 0).unwrap(),
        "its memory is on node 0 already"
    );
    assert!(machine.move_thread_memory(key, 1).unwrap());
    assert_eq!((machine.memory_node(0), machine.memory_node(1)), (Some(1), Some(1)));
    assert_eq!(machine.totals().memory_moves, 1, "only that thread's memory moved");
    // The copy: 0.1 s of its CPU time without progress, then local.
    machine.advance_to(2.0);
    let moved = observe(&mut machine)[0].speed.unwrap();
    assert!(
        close(moved, 0.9, 1e-9),
        "0.1 s of the second paid for the copy: {moved}"
    );
    machine.advance_to(3.0);
    let local = observe(&mut machine)[0].speed.unwrap();
    assert!(close(local, 1.0, 1e-9), "local: {local}");
    assert!(!machine.move_thread_memory(999, 0).unwrap(), "no such thread");
}

#[test]
fn the_os_model_ignores_memory_placement() {
    let places = places("node:2 core:1 pu:1");
    let whole = places.layout.whole();
    let mut workload = spec(WorkloadKind::Independent, 2, 100.0);
    workload.memory_intensity = 1.0;
    let mut machine = SimMachine::new(
        &places,
        &workload,
        BackgroundSchedule::idle(2),
        exact(SimMetric::Heartbeat),
        4,
    );
    observe(&mut machine);
    // Both threads start on node 0 and touch their memory there.
    pin(&mut machine, 0, 0);
    pin(&mut machine, 1, 0);
    machine.advance_to(0.5);
    assert_eq!((machine.memory_node(0), machine.memory_node(1)), (Some(0), Some(0)));
    pin(&mut machine, 0, whole);
    pin(&mut machine, 1, whole);
    machine.advance_to(1.0);
    observe(&mut machine);
    let cores = machine.thread_cores();
    assert_ne!(
        cores[0], cores[1],
        "the balancer split them across the nodes: {cores:?}"
    );
    machine.advance_to(2.0);
    let speeds: Vec<f64> = observe(&mut machine).iter().map(|s| s.speed.unwrap()).collect();
    let remote = (0..2).find(|&t| machine.node_of(cores[t]) == 1).unwrap();
    assert_eq!(machine.memory_node(remote), Some(0), "its memory stayed on node 0");
    // numa_factor 2, memory intensity 1: half speed on the remote node.
    assert!(close(speeds[remote], 0.5, 1e-9), "{speeds:?}");
    assert!(close(speeds[1 - remote], 1.0, 1e-9), "{speeds:?}");
}

#[test]
fn best_static_completes_at_the_optimal_makespan() {
    use pinlearn_engine::PolicyChoice;
    use pinlearn_experiment::Scheduler;
    use pinlearn_sim::Experiment;
    let topology = Topology::from_synthetic("node:1 core:3 pu:1").unwrap();
    let mut workload = spec(WorkloadKind::Independent, 6, 30.0);
    workload.weights = vec![3.0, 3.0, 2.0, 2.0, 1.0, 1.0];
    let experiment = Experiment {
        topology,
        workload,
        params: exact(SimMetric::Cpu),
        settings: pinlearn_engine::Settings::default(),
        background_weight: 2.0,
    };
    let prepared = experiment.prepare("C.1".parse().unwrap()).unwrap();
    assert!(prepared.optimum.exact);
    assert_eq!(prepared.optimum.makespan, 4.0, "3+1 | 3+1 | 2+2");
    let best = experiment.run(&prepared, Scheduler::BEST_STATIC, 0, 1).unwrap().record;
    let round_robin = experiment
        .run(&prepared, Scheduler::policy(PolicyChoice::Static), 0, 1)
        .unwrap()
        .record;
    let (best_model, round_robin_model) = (best.model.clone().unwrap(), round_robin.model.clone().unwrap());
    // Work per unit of weight: 30 s / max(12/3, 3) = 7.5 s; the optimum finishes at 4 × 7.5.
    assert!(close(best.completion_s.unwrap(), 30.0, 1e-9), "{best:?}");
    assert_eq!(best_model.makespan, Some(4.0));
    assert_eq!(best_model.nash, Some(true));
    // Round robin: 3+2 | 3+1 | 2+1.
    assert_eq!(round_robin_model.makespan, Some(5.0), "{round_robin:?}");
    assert!(close(round_robin.completion_s.unwrap(), 37.5, 1e-9), "{round_robin:?}");
}

/// Paper 000 Prop. 5.2 in the simulator: with u_i = w_i / load (objective
/// `own`, the cpu metric, CFS weights w_i), the learned assignment settles on
/// a Nash equilibrium whose makespan is within 2m/(m+1) of the optimum.
#[test]
fn learning_own_speed_ends_at_a_nash_equilibrium_within_the_bound() {
    let places = places("node:1 core:3 pu:1");
    let mut workload = spec(WorkloadKind::Independent, 6, 1e6);
    workload.weights = vec![3.0, 2.0, 2.0, 1.0, 1.0, 1.0];
    let game = LoadGame::identical(workload.demands(), 3);
    let optimum = game.optimum();
    for seed in 1..=4 {
        let mut machine = SimMachine::new(
            &places,
            &workload,
            BackgroundSchedule::idle(3),
            MachineParams::default(),
            seed,
        );
        // The learner alone: with the guard, Linux's windows (the modelled
        // OS is at the optimum here) would feed the assignment judged. And
        // the game alone: catch-up trades even out the threads' run time,
        // which is not the game's utility (here the threads' CFS weights
        // differ, so the heavier ones run ahead wherever they are, and the
        // trades would take them onto crowded cores: docs/configuration.md).
        let cfg = LearnConfig {
            objective: Objective::Own,
            guard: GuardConfig {
                enabled: false,
                ..GuardConfig::default()
            },
            crowd: CrowdConfig {
                catch_up_s: 0.0,
                ..CrowdConfig::default()
            },
            ..LearnConfig::default()
        };
        let policy = LearnPolicy::new(places.layout.clone(), cfg, seed);
        let mut engine = Engine::new(Box::new(policy), places.clone(), 40, None);
        let mut history = Vec::new();
        for k in 0..3000u32 {
            engine.step(&mut machine, f64::from(k) * 0.05).unwrap();
            history.push(machine.thread_cores());
            machine.advance_to(f64::from(k + 1) * 0.05);
        }
        assert!(machine.program().tasks().iter().all(|t| t.activity != Activity::Done));
        let last = &history[history.len() - 40..];
        let modal: Vec<usize> = (0..6)
            .map(|t| {
                (0..3)
                    .max_by_key(|&c| last.iter().filter(|a| a[t] == c).count())
                    .unwrap()
            })
            .collect();
        assert!(game.is_nash(&modal), "seed {seed}: {modal:?} is not an equilibrium");
        let ratio = game.makespan(&modal) / optimum.makespan;
        assert!(ratio <= game.anarchy_bound() + 1e-9, "seed {seed}: ratio {ratio}");
    }
}

/// Replays what was measured on a 2-CPU machine with autogroup on
/// (2026-11-24, docs/simulator.md, "Calibration"): two busy processes of
/// one session beside a spinner of another session pinned to CPU 0. Pinned
/// one per CPU, the one beside the spinner got 0.331 of its CPU and the
/// other 0.993; left to Linux, both ran on CPU 1 (0.503 and 0.497), the
/// spinner alone on CPU 0. The same session would give 1/2 beside it, and
/// an OS that balances threads would keep one thread on each CPU.
#[test]
fn another_sessions_load_weighs_as_a_group_and_the_os_keeps_the_program_off_it() {
    use pinlearn_experiment::LoadSession;
    let places = places("node:1 core:2 pu:1");
    let loaded_core_0 = || BackgroundSchedule::new(vec![(0.0, vec![1.0, 0.0])]);
    let params = |session| MachineParams {
        load_session: session,
        ..exact(SimMetric::Cpu)
    };
    for (session, beside_the_load) in [(LoadSession::Own, 1.0 / 3.0), (LoadSession::Same, 0.5)] {
        let workload = spec(WorkloadKind::Independent, 2, 100.0);
        let mut machine = SimMachine::new(&places, &workload, loaded_core_0(), params(session), 1);
        observe(&mut machine);
        pin(&mut machine, 0, 0);
        pin(&mut machine, 1, 1);
        machine.advance_to(0.5);
        observe(&mut machine);
        machine.advance_to(1.5);
        let speeds: Vec<f64> = observe(&mut machine).iter().map(|s| s.speed.unwrap()).collect();
        assert!(close(speeds[0], beside_the_load, 1e-9), "{session}: pinned {speeds:?}");
        assert!(close(speeds[1], 1.0, 1e-9), "{session}: pinned {speeds:?}");
    }
    let mut machine = SimMachine::new(
        &places,
        &spec(WorkloadKind::Independent, 2, 100.0),
        loaded_core_0(),
        params(LoadSession::Own),
        1,
    );
    machine.advance_to(1.0);
    assert_eq!(
        machine.thread_cores(),
        vec![1, 1],
        "the OS keeps both off the loaded core"
    );
    let (program, background) = machine.cpu_given();
    assert!(
        program[0] < 1e-9 && close(background[0], 1.0, 1e-6),
        "{program:?} {background:?}"
    );
    let mut machine = SimMachine::new(
        &places,
        &spec(WorkloadKind::Independent, 2, 100.0),
        loaded_core_0(),
        params(LoadSession::Same),
        1,
    );
    machine.advance_to(1.0);
    let mut cores = machine.thread_cores();
    cores.sort_unstable();
    assert_eq!(
        cores,
        vec![0, 1],
        "thread against thread, one thread per core is balanced"
    );
}

/// Two cores, another session's busy loop (weight `loop_weight`, 0 for
/// none) on core 0, and `workload`'s threads pinned by key: `cores[k]` is
/// the core of key k + 1.
fn pinned_beside_a_loop(workload: &WorkloadSpec, loop_weight: f64, cores: &[usize]) -> SimMachine {
    use pinlearn_experiment::LoadSession;
    let places = places("node:1 core:2 pu:1");
    let params = MachineParams {
        load_session: LoadSession::Own,
        ..exact(SimMetric::Cpu)
    };
    let load = BackgroundSchedule::new(vec![(0.0, vec![loop_weight, 0.0])]);
    let mut machine = SimMachine::new(&places, workload, load, params, 1);
    observe(&mut machine);
    for (key, &core) in (1..).zip(cores) {
        assert!(machine.place(key, core, &CpuSet::new()).unwrap());
    }
    machine
}

/// Two barrier workers, one per core, another session's loop on core 0:
/// the worker beside the loop gates every round. Its group's weight there
/// is the program's split by the cores' load averages (Linux's
/// `calc_group_shares`), and the sibling asleep at the barrier keeps its
/// load average for tens of milliseconds (PELT's half-life, 32 ms): the
/// straggler does not get half of core 0 the moment its sibling sleeps. A
/// round of `w` of work takes `w + (2/3) w / (1/2) = 7/3 w` where the split
/// follows the runnable threads at once, `(1 + sqrt 2) w` where it follows
/// their whole-round average; the model's 0.1 s rounds lie in between.
#[test]
fn a_sibling_asleep_at_the_barrier_keeps_its_load_average_for_a_while() {
    let workload = spec(WorkloadKind::Barrier, 2, 10.0);
    let mut machine = pinned_beside_a_loop(&workload, 1.0, &[0, 1]);
    machine.advance_to(1000.0);
    let rounds = machine.completion().expect("the rounds end") / 10.0;
    assert!(
        rounds > 7.0 / 3.0 + 0.01 && rounds < 1.0 + 2f64.sqrt(),
        "{rounds} w a round"
    );
    // Beside nothing, each worker has its core: w a round.
    let mut alone = pinned_beside_a_loop(&workload, 0.0, &[0, 1]);
    alone.advance_to(1000.0);
    let alone = alone.completion().expect("the rounds end");
    assert!(close(alone, 10.0, 0.01), "{alone}");
}

#[test]
fn waking_workers_preempt_another_session_as_often_as_they_wait_and_a_main_thread_never() {
    // The other session's share of core 0 over 10 s.
    let background_share = |workload: WorkloadSpec, cores: &[usize]| {
        let mut machine = pinned_beside_a_loop(&workload, 1.0, cores);
        machine.advance_to(10.0);
        let (_, background) = machine.cpu_given();
        background[0] / 10.0
    };
    let barrier = |workers, grain_s, main_thread| WorkloadSpec {
        grain_s,
        main_thread,
        ..spec(WorkloadKind::Barrier, workers, 100.0)
    };
    // Two waking workers on core 0: they take 0.9 of it where they wait
    // often (no grain given), 0.9 of the way there by slice / grain (1.4 ms
    // on 2 CPUs) where they wait every 5 ms.
    let often = background_share(barrier(4, None, false), &[0, 1, 0, 1]);
    assert!(close(often, 0.1, 0.02), "{often}");
    let seldom = background_share(barrier(4, Some(5e-3), false), &[0, 1, 0, 1]);
    assert!(seldom > 0.3 && seldom < 0.6, "{seldom}");
    // A pipeline's stages wake at every item like barrier threads.
    let pipeline = WorkloadSpec {
        stages: vec![1.0, 1.0, 1.0, 1.0],
        ..spec(WorkloadKind::Pipeline, 4, 100.0)
    };
    let stages = background_share(pipeline, &[0, 1, 0, 1]);
    assert!(stages < 0.15, "{stages}");
    // The main thread (key 1) asleep in join on core 0 beside one worker:
    // one waking worker there, which gets the share of its group's weight.
    let beside_main = background_share(barrier(2, None, true), &[0, 0, 1]);
    assert!(beside_main > 0.45, "{beside_main}");
}

#[test]
fn spinning_workers_that_share_a_core_take_turns_and_pay_every_spin_but_the_last() {
    // 4 workers, rounds of 0.1 ms of work, a spin of 0.2 ms (σ = 2) before
    // they sleep, no load. The completion, in simulated seconds, pinned
    // to `cores` (keys 1 ...).
    let completion = |grain_s: Option<f64>, cores: &[usize]| {
        let workload = WorkloadSpec {
            spin_s: Some(2e-4),
            grain_s,
            ..spec(WorkloadKind::BarrierSpin, cores.len(), 10.0)
        };
        let mut machine = pinned_beside_a_loop(&workload, 0.0, cores);
        machine.advance_to(1000.0);
        machine.completion().expect("the rounds end")
    };
    // Two a core: each round's k w of work takes k w + (k - 1) σ w, twice
    // the fluid share's time.
    let fluid = completion(None, &[0, 1, 0, 1]);
    assert!(close(fluid, 10.0, 0.01), "{fluid}");
    let turns = completion(Some(1e-4), &[0, 1, 0, 1]);
    assert!(close(turns, 2.0 * fluid, 0.01), "{turns} against {fluid}");
    // Four on one core: 1 + 3/4 σ = 2.5 times its fluid time (two cores'
    // work on one: 20 s).
    let crowded = completion(Some(1e-4), &[0, 0, 0, 0]);
    assert!(close(crowded, 2.5 * 20.0, 0.01), "{crowded}");
    // One a core: nobody waits behind a spinner.
    let alone = completion(Some(1e-4), &[0, 1]);
    assert!(close(alone, completion(None, &[0, 1]), 0.01), "{alone}");
}

#[test]
fn spinning_workers_preempt_another_session_only_where_their_spins_are_short_beside_their_turns() {
    // The other session's share of core 0 over 10 s, workers pinned to
    // alternate cores, rounds of 0.2 ms of work, the spin given.
    let background_share = |workers: usize, spin_s: f64| {
        let workload = WorkloadSpec {
            spin_s: Some(spin_s),
            grain_s: Some(2e-4),
            ..spec(WorkloadKind::BarrierSpin, workers, 100.0)
        };
        let cores: Vec<usize> = (0..workers).map(|i| i % 2).collect();
        let mut machine = pinned_beside_a_loop(&workload, 1.0, &cores);
        machine.advance_to(10.0);
        let (_, background) = machine.cpu_given();
        background[0] / 10.0
    };
    // Two a core: a spin of half the partner's work (σ = 0.5 <= k - 1)
    // preempts as blocking waits do; one of twice it (σ = 2) not at all.
    let short = background_share(4, 1e-4);
    assert!(close(short, 0.1, 0.02), "{short}");
    let long = background_share(4, 4e-4);
    assert!(long > 0.3, "{long}");
    // Four a core wait for three partners' work: the same spin still
    // preempts (σ / (k - 1) = 2/3), as measured.
    let four = background_share(8, 4e-4);
    assert!(close(four, 0.1, 0.02), "{four}");
}

#[test]
fn a_consumer_beside_another_session_stalls_its_producer_when_the_queue_fills_within_a_slice() {
    // Stages 3,1,1, one thread each, pinned as a round-robin pin does with
    // the main thread first (`pinlearn work pipeline --stages 3,1,1`): the
    // first and last stages on core 1, the middle one alone on core 0 beside
    // another session's busy loop. The completion, in simulated seconds.
    let completion = |grain_s: Option<f64>, queue_capacity: u64, loaded: bool| {
        let workload = WorkloadSpec {
            stages: vec![3.0, 1.0, 1.0],
            grain_s,
            queue_capacity,
            main_thread: true,
            ..spec(WorkloadKind::Pipeline, 2, 10.0)
        };
        // Keys: main 1, stages 0, 1 and 2 are keys 2, 3 and 4.
        let mut machine = pinned_beside_a_loop(&workload, if loaded { 1.0 } else { 0.0 }, &[0, 1, 0, 1]);
        machine.advance_to(1000.0);
        machine.completion().expect("the pipeline ends")
    };
    let unloaded = completion(Some(8e-6), 64, false);
    // 64 items of 8 us fill in 0.5 ms, within the loop's 1.4 ms slice: the
    // first stage is blocked about half of its time.
    let short = completion(Some(8e-6), 64, true);
    assert!(
        short > 1.6 * unloaded && short < 2.4 * unloaded,
        "{short} against {unloaded}"
    );
    // 4096 items take 33 ms to fill: no stall, as without a grain (the
    // fluid queues alone).
    let long = completion(Some(8e-6), 4096, true);
    let fluid = completion(None, 64, true);
    assert!(close(long, fluid, 1e-9), "{long} against {fluid}");
    assert!(long < 1.2 * unloaded, "{long} against {unloaded}");
    // Without the loop nothing stalls, whatever the queues.
    assert!(close(
        completion(Some(8e-6), 64, false),
        completion(None, 64, false),
        1e-9
    ));
}

/// Completion and the OS balancer's moves of `4 * cores` blocking barrier
/// threads on `2 * cores` cores of one node, the first `cores` of them
/// loaded by two CPU hogs each of the program's session, with barrier rounds
/// varying by `round_jitter`; `pinned`: each thread pinned where the OS
/// settles them (one on every loaded core, three on every other).
fn barrier_beside_hogs(cores: usize, round_jitter: f64, pinned: bool, seed: u64) -> (f64, u64) {
    let places = places(&format!("node:1 core:{} pu:1", 2 * cores));
    let workload = spec(WorkloadKind::Barrier, 4 * cores, 10.0);
    let mut hogs = vec![2.0; cores];
    hogs.extend(vec![0.0; cores]);
    let background = BackgroundSchedule::new(vec![(0.0, hogs)]);
    let params = MachineParams {
        round_jitter,
        ..exact(SimMetric::Cpu)
    };
    let mut machine = SimMachine::new(&places, &workload, background, params, seed);
    if pinned {
        let core_places: Vec<usize> = places.layout.cores_of(0).collect();
        for index in 0..4 * cores {
            let core = if index < cores {
                index
            } else {
                cores + (index - cores) / 3
            };
            pin(&mut machine, index, core_places[core]);
        }
    }
    let mut t = 0.0;
    while machine.completion().is_none() && t < 200.0 {
        t += 0.5;
        machine.advance_to(t);
    }
    let completion = machine.completion().expect("the program completes");
    (completion, machine.totals().balancer_moves)
}

#[test]
fn threads_that_reach_a_barrier_apart_sleep_and_their_wake_ups_move_them() {
    // 20 threads, 10 cores, 5 of them loaded: one thread beside the hogs of
    // every loaded core and three on every other core get a third of a core
    // each. With rounds exactly alike they all arrive at once, none sleeps,
    // and the OS never moves one: a knife edge no real program stays on.
    let (exact_s, exact_moves) = barrier_beside_hogs(5, 0.0, false, 1);
    // 5 core-seconds of work each (sized for 10 s on the 10 idle cores).
    assert!(close(exact_s, 15.0, 1e-6), "a third of a core each: {exact_s}");
    assert_eq!(exact_moves, 0, "settled from the start");
    // Rounds that vary by up to 3%, as this machine's do: the early threads
    // sleep, a woken one whose core the hogs keep busy takes an idle core of
    // its node, the balancer sends one back, and each round waits for the
    // last. The same threads pinned where the OS settles them do not move.
    for seed in 1..4 {
        let (os_s, os_moves) = barrier_beside_hogs(5, 0.03, false, seed);
        let (pinned_s, _) = barrier_beside_hogs(5, 0.03, true, seed);
        assert!(os_moves > 500, "seed {seed}: {os_moves} moves");
        assert!(
            os_s > pinned_s * 1.01,
            "seed {seed}: the OS {os_s} s, pinned {pinned_s} s"
        );
        assert!(pinned_s < exact_s, "seed {seed}: shorter rounds, {pinned_s} s");
    }
}

/// When `workload` completes on `places` with `bandwidth`, its threads
/// pinned to the core places `cores` (thread i on `cores[i]`), or left to
/// the OS model where `cores` is empty.
fn completion_with_bandwidth(workload: &WorkloadSpec, bandwidth: Option<f64>, cores: &[usize]) -> f64 {
    let places = places("node:1 core:2 pu:1");
    let params = MachineParams {
        memory_bandwidth: bandwidth,
        ..exact(SimMetric::Cpu)
    };
    let mut machine = SimMachine::new(&places, workload, BackgroundSchedule::new(Vec::new()), params, 1);
    observe(&mut machine);
    for (index, &core) in cores.iter().enumerate() {
        pin(&mut machine, index, core);
    }
    machine.advance_to(100.0);
    machine.completion().expect("the program finishes")
}

#[test]
fn memory_bound_threads_share_their_node_s_bandwidth() {
    let mut stream = spec(WorkloadKind::Independent, 2, 2.0);
    stream.memory_intensity = 1.0;
    // Sized to take its duration alone on both cores, bandwidth or not.
    for bandwidth in [None, Some(1.5), Some(0.5)] {
        let alone = completion_with_bandwidth(&stream, bandwidth, &[]);
        assert!(close(alone, 2.0, 1e-6), "{bandwidth:?}: alone {alone}");
    }
    // Both threads on one core: half the CPU time without a limit; with a
    // node serving 1.5 cores' worth, the two cores together had only gone
    // 1.5 times as fast as one.
    let crowded = |bandwidth| completion_with_bandwidth(&stream, bandwidth, &[0, 0]);
    assert!(close(crowded(None), 4.0, 1e-6), "no limit: {}", crowded(None));
    assert!(close(crowded(Some(1.5)), 3.0, 1e-6), "1.5: {}", crowded(Some(1.5)));
    // A node that serves less than one core asks for: where the threads run
    // changes nothing.
    assert!(close(crowded(Some(0.5)), 2.0, 1e-6), "0.5: {}", crowded(Some(0.5)));
    // A thread that computes half the time waits on memory for the other half only.
    let mut half = stream.clone();
    half.memory_intensity = 0.5;
    let spread = completion_with_bandwidth(&half, Some(0.5), &[0, 1]);
    assert!(close(spread, 2.0, 1e-6), "half memory, spread: {spread}");
    // Crowded on one core, the pair asks for 0.5: the bandwidth suffices, and
    // the time is the CPU's: 2 s of work each at half a core, over the 1.5
    // times a thread took alone ((1 - 0.5) + 0.5 * (0.5 * 2 / 0.5)).
    let together = completion_with_bandwidth(&half, Some(0.5), &[0, 0]);
    assert!(close(together, 4.0 / 1.5, 1e-6), "half memory, one core: {together}");
}
