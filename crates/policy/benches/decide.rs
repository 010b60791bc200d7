//! Cost of one `LearnPolicy::decide` step with every speed known, from a
//! small machine to a 256-core two-node one. The policy has already run a few
//! periods so every automaton learns and draws (no fresh threads).

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use pinlearn_policy::{Layout, LearnConfig, LearnPolicy, PeriodInput, Policy, ThreadSample};

fn decide(c: &mut Criterion) {
    let mut group = c.benchmark_group("decide");
    for (threads, nodes, cores_per_node) in [(64, 1, 2), (64, 1, 16), (1024, 2, 128)] {
        let layout = Layout::uniform(nodes, cores_per_node);
        let mut policy = LearnPolicy::new(layout, LearnConfig::default(), 42);
        let samples: Vec<ThreadSample> = (0..threads)
            .map(|key| ThreadSample {
                key,
                speed: Some(0.3 + 0.6 * ((key * 37) % 101) as f64 / 101.0),
                share: None,
            })
            .collect();
        let mut period = 0u64;
        let mut step = |policy: &mut LearnPolicy| {
            let input = PeriodInput {
                period,
                time_s: period as f64 * 0.05,
                threads: &samples,
                numa_tick: false,
                progress: None,
                waiting: None,
                queued: None,
                cores: None,
                bubbles: None,
            };
            period += 1;
            policy.decide(&input)
        };
        for _ in 0..3 {
            step(&mut policy);
        }
        let label = format!("{threads}x{}", nodes * cores_per_node);
        group.bench_function(BenchmarkId::from_parameter(label), |b| b.iter(|| step(&mut policy)));
    }
    group.finish();
}

criterion_group!(benches, decide);
criterion_main!(benches);
