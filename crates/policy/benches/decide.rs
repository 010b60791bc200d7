//! Cost of one `LearnPolicy::decide` step with every speed and run share
//! known, from a small machine to a 256-core two-node one, for both ways
//! threads move: crowd moves (the default), every thread waking between
//! short rounds beside another group's load, with and without the pooled
//! moves (`pooled`: every thread works as much as its run share lets it,
//! so after 2 spans of 40 periods the learner takes the threads for a
//! pool), and the automata's draws. The
//! guard is off, so every step is the learner's own (with the guard on,
//! Linux's windows return early and cost next to nothing), and the policy
//! has already run a few periods so every automaton learns (no fresh
//! threads).
//!
//! ```text
//!   (threads, nodes x cores) x (drawn | crowd | pooled) ─► 3 warm-up steps (pooled: 100) ─► timed steps
//! ```

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use pinlearn_policy::{GuardConfig, Layout, LearnConfig, LearnPolicy, Moves, PeriodInput, Policy, ThreadSample};

fn decide(c: &mut Criterion) {
    let mut group = c.benchmark_group("decide");
    for (way, moves, pooled) in [
        ("drawn", Moves::Drawn, false),
        ("crowd", Moves::Crowd, false),
        ("pooled", Moves::Crowd, true),
    ] {
        for (threads, nodes, cores_per_node) in [(64, 1, 2), (64, 1, 16), (1024, 2, 128)] {
            let layout = Layout::uniform(nodes, cores_per_node);
            let cfg = LearnConfig {
                moves,
                guard: GuardConfig {
                    enabled: false,
                    ..GuardConfig::default()
                },
                ..LearnConfig::default()
            };
            let mut policy = LearnPolicy::new(layout, cfg, 42);
            let samples: Vec<ThreadSample> = (0..threads)
                .map(|key| {
                    let speed = 0.3 + 0.6 * ((key * 37) % 101) as f64 / 101.0;
                    ThreadSample {
                        key,
                        speed: Some(speed),
                        share: Some(speed),
                        // Every thread sleeps between short rounds beside
                        // another group's load: the crowd's wake-ups count.
                        grain_s: Some(0.3e-3),
                        worked: pooled.then_some(speed),
                    }
                })
                .collect();
            let mut period = 0u64;
            let mut step = |policy: &mut LearnPolicy| {
                let input = PeriodInput {
                    wake_slice_s: Some(1.5e-3),
                    ..PeriodInput::of(period, period as f64 * 0.05, &samples)
                };
                period += 1;
                policy.decide(&input)
            };
            for _ in 0..if pooled { 100 } else { 3 } {
                step(&mut policy);
            }
            let label = format!("{threads}x{}", nodes * cores_per_node);
            group.bench_function(BenchmarkId::new(way, label), |b| b.iter(|| step(&mut policy)));
        }
    }
    group.finish();
}

criterion_group!(benches, decide);
criterion_main!(benches);
