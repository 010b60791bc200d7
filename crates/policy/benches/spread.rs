//! Cost of one bubbles spread: 4096 threads in nested bubbles (8 outer
//! bubbles of 8 inner bubbles of 64 threads, and the same threads with no
//! bubble at all) over 1024 single-PU cores in 8 NUMA nodes; and a
//! respread of the nested ones, every thread where the first spread put it
//! but a quarter of them blocked (load 0), as a regeneration sees them.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use pinlearn_policy::{BubbleSet, BubbleSpec, DEFAULT_REMOTE_COST, Layout, Member, PlaceTree, spread};

fn spread_bench(c: &mut Criterion) {
    let (nodes, cores) = (8, 128);
    let layout = Layout::uniform(nodes, cores);
    let tree = PlaceTree::without_groups(&layout);
    let mut specs = Vec::new();
    for outer in 0..8 {
        specs.push(BubbleSpec::new(format!("o{outer}")));
        for inner in 0..8 {
            specs.push(BubbleSpec::new(format!("o{outer}i{inner}")).within(format!("o{outer}")));
        }
    }
    let nested = BubbleSet::new(specs).expect("bubbles");
    let inner: Vec<usize> = (0..nested.len()).filter(|&b| nested.get(b).parent.is_some()).collect();
    let threads = 4096;
    let in_bubbles: Vec<Member> = (0..threads)
        .map(|t| Member {
            bubble: Some(inner[t / 64]),
            load: 1.0,
            priority: 0,
            previous: None,
        })
        .collect();
    let loose: Vec<Member> = in_bubbles.iter().map(|m| Member { bubble: None, ..*m }).collect();
    let mut group = c.benchmark_group("spread");
    group.bench_function(BenchmarkId::new("nested", "4096x1024"), |b| {
        b.iter(|| spread(&tree, &nested, &in_bubbles, DEFAULT_REMOTE_COST))
    });
    let first = spread(&tree, &nested, &in_bubbles, DEFAULT_REMOTE_COST);
    let regenerated: Vec<Member> = in_bubbles
        .iter()
        .zip(&first)
        .enumerate()
        .map(|(t, (m, &place))| Member {
            load: if t % 4 == 0 { 0.0 } else { 1.0 },
            previous: Some(place),
            ..*m
        })
        .collect();
    group.bench_function(BenchmarkId::new("respread", "4096x1024"), |b| {
        b.iter(|| spread(&tree, &nested, &regenerated, DEFAULT_REMOTE_COST))
    });
    let none = BubbleSet::default();
    group.bench_function(BenchmarkId::new("flat", "4096x1024"), |b| {
        b.iter(|| spread(&tree, &none, &loose, DEFAULT_REMOTE_COST))
    });
    group.finish();
}

criterion_group!(benches, spread_bench);
criterion_main!(benches);
