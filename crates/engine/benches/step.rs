//! The manager's own cost per period on a live process: one `Engine::step`
//! (discover threads, read their schedstat, decide, re-pin what changed)
//! for this benchmark process with 64 extra idle threads, with and without
//! descendant discovery, under the `os` and `learn` policies; plus the pure
//! decision step for n threads x m places.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use pinlearn_engine::live::{LiveProcess, Scope, get_affinity};
use pinlearn_engine::{Engine, Metric, Places};
use pinlearn_policy::{Layout, LearnConfig, LearnPolicy, OsPolicy, PeriodInput, Policy, ThreadSample};
use pinlearn_topology::Topology;
use std::sync::{Arc, Barrier};

fn live_step(c: &mut Criterion) {
    let threads = 64;
    let release = Arc::new(Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let release = release.clone();
            std::thread::spawn(move || {
                release.wait();
            })
        })
        .collect();
    let allowed = get_affinity(0).expect("affinity");
    let topology = Topology::detect()
        .expect("topology")
        .restrict(&allowed)
        .expect("allowed CPUs");
    let places = Places::new(&topology);
    let mut group = c.benchmark_group("engine_step_live_64_threads");
    for (name, children, learn) in [
        ("os", false, false),
        ("os+children", true, false),
        ("learn+children", true, true),
    ] {
        let policy: Box<dyn Policy> = if learn {
            Box::new(LearnPolicy::new(places.layout.clone(), LearnConfig::default(), 1))
        } else {
            Box::new(OsPolicy::new(places.layout.clone()))
        };
        let mut engine = Engine::new(policy, places.clone(), 40, None);
        let scope = Scope::process_tree(std::process::id(), children);
        let mut target = LiveProcess::new(scope, Metric::Cpu, places.cpus.clone(), 0.05);
        let mut t = 0.0;
        group.bench_function(name, |b| {
            b.iter(|| {
                t += 0.05;
                engine.step(&mut target, t).expect("step");
            })
        });
        target.restore();
    }
    group.finish();
    release.wait();
    for w in workers {
        w.join().expect("worker");
    }
}

fn decide(c: &mut Criterion) {
    let mut group = c.benchmark_group("learn_decide");
    for (threads, nodes, cores) in [(64usize, 1usize, 2usize), (64, 1, 16), (1024, 2, 128)] {
        let layout = Layout::uniform(nodes, cores);
        let mut policy = LearnPolicy::new(layout, LearnConfig::default(), 1);
        let samples: Vec<ThreadSample> = (0..threads as u64)
            .map(|k| ThreadSample::of(k, Some(0.5 + (k % 7) as f64 * 0.05)))
            .collect();
        let mut period = 0u64;
        group.bench_with_input(
            BenchmarkId::from_parameter(format!("{threads}x{}", nodes * cores)),
            &(),
            |b, _| {
                b.iter(|| {
                    period += 1;
                    policy.decide(&PeriodInput {
                        numa_tick: period.is_multiple_of(40),
                        ..PeriodInput::of(period, period as f64 * 0.05, &samples)
                    })
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, live_step, decide);
criterion_main!(benches);
