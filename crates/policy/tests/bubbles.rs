//! The bubbles' spread placement: golden placements on small trees (one
//! bubble per node, L3 containment, the light-entity rule, priorities, an
//! uneven split evened), the policy's regeneration, and properties over
//! random trees and bubbles.

use pinlearn_policy::{
    BAR_TICKS, BubbleError, BubbleInput, BubbleSet, BubbleSpec, BubblesPolicy, CrowdConfig, DEFAULT_REMOTE_COST,
    GuardConfig, Layout, Member, PeriodInput, PlaceKind, PlaceTree, Policy, QUIET_PERIODS, REGENERATE_PERIODS,
    SETTLING_PERIODS, ThreadSample, spread,
};
use proptest::prelude::*;
use std::ops::Range;

/// A layout of `nodes` nodes of `cores` one-PU cores, with groups (kind and
/// CPU range), and its place tree; also the CPU range of every place.
fn machine(nodes: usize, cores: usize, groups: &[(PlaceKind, Range<usize>)]) -> (Layout, PlaceTree, Vec<Range<usize>>) {
    let mut layout = Layout::uniform(nodes, cores);
    let mut ranges = Vec::new();
    for node in 0..nodes {
        for core in 0..cores {
            let cpu = node * cores + core;
            ranges.push(cpu..cpu + 1);
        }
        ranges.push(node * cores..(node + 1) * cores);
    }
    if nodes > 1 {
        ranges.push(0..nodes * cores);
    }
    for (kind, range) in groups {
        let node = (0..nodes).find(|n| n * cores <= range.start && range.end <= (n + 1) * cores);
        layout.add_group(*kind, node, range.len());
        ranges.push(range.clone());
    }
    let tree = PlaceTree::new(&layout, |outer, inner| {
        ranges[outer].start <= ranges[inner].start && ranges[inner].end <= ranges[outer].end
    });
    (layout, tree, ranges)
}

fn bubbles(specs: &[(&str, Option<&str>)]) -> BubbleSet {
    BubbleSet::new(
        specs
            .iter()
            .map(|&(name, parent)| {
                let spec = BubbleSpec::new(name);
                match parent {
                    Some(parent) => spec.within(parent),
                    None => spec,
                }
            })
            .collect(),
    )
    .expect("valid bubbles")
}

fn member(bubble: Option<usize>) -> Member {
    Member {
        bubble,
        load: 1.0,
        priority: 0,
        previous: None,
    }
}

/// The node (index) whose CPUs hold the place's.
fn node_of(layout: &Layout, ranges: &[Range<usize>], place: usize) -> Option<usize> {
    (0..layout.nodes()).find(|&n| {
        let node = &ranges[layout.node_place(n)];
        node.start <= ranges[place].start && ranges[place].end <= node.end
    })
}

#[test]
fn four_bubbles_of_four_go_one_per_node_each_thread_on_its_own_core() {
    let (layout, tree, ranges) = machine(4, 4, &[]);
    let set = bubbles(&[("a", None), ("b", None), ("c", None), ("d", None)]);
    let members: Vec<Member> = (0..16).map(|t| member(Some(t % 4))).collect();
    let places = spread(&tree, &set, &members, DEFAULT_REMOTE_COST);
    let mut nodes_used = std::collections::BTreeSet::new();
    for bubble in 0..4 {
        let nodes: std::collections::BTreeSet<_> = (0..16)
            .filter(|t| t % 4 == bubble)
            .map(|t| node_of(&layout, &ranges, places[t]).expect("within a node"))
            .collect();
        assert_eq!(nodes.len(), 1, "bubble {bubble} split over nodes {nodes:?}: {places:?}");
        nodes_used.extend(nodes);
    }
    assert_eq!(nodes_used.len(), 4, "{places:?}");
    let mut cores: Vec<usize> = places.clone();
    cores.sort_unstable();
    cores.dedup();
    assert_eq!(cores.len(), 16, "one thread per core: {places:?}");
    assert!(places.iter().all(|&p| layout.places()[p].kind == PlaceKind::Core));
}

#[test]
fn a_bubble_of_two_takes_two_cores_of_one_node() {
    // one node of eight cores: two different cores
    let (_, tree, _) = machine(1, 8, &[]);
    let set = bubbles(&[("pair", None)]);
    let places = spread(&tree, &set, &[member(Some(0)), member(Some(0))], DEFAULT_REMOTE_COST);
    assert_ne!(places[0], places[1]);
    assert!(places.iter().all(|&p| p < 8), "cores: {places:?}");
    // two nodes of four: both in one node, on different cores
    let (layout, tree, ranges) = machine(2, 4, &[]);
    let places = spread(&tree, &set, &[member(Some(0)), member(Some(0))], DEFAULT_REMOTE_COST);
    assert_ne!(places[0], places[1]);
    assert_eq!(
        node_of(&layout, &ranges, places[0]),
        node_of(&layout, &ranges, places[1])
    );
    assert_eq!(layout.places()[places[0]].kind, PlaceKind::Core);
}

#[test]
fn bubbles_of_two_stay_inside_an_l3() {
    // package:2 l3cache:2 core:2 pu:1 on one node
    let (_, tree, ranges) = machine(
        1,
        8,
        &[
            (PlaceKind::Package, 0..4),
            (PlaceKind::Package, 4..8),
            (PlaceKind::L3, 0..2),
            (PlaceKind::L3, 2..4),
            (PlaceKind::L3, 4..6),
            (PlaceKind::L3, 6..8),
        ],
    );
    let set = bubbles(&[("a", None), ("b", None), ("c", None), ("d", None)]);
    let members: Vec<Member> = (0..8).map(|t| member(Some(t / 2))).collect();
    let places = spread(&tree, &set, &members, DEFAULT_REMOTE_COST);
    let l3s: Vec<usize> = tree.places_at(PlaceKind::L3).collect();
    let l3_of = |place: usize| {
        l3s.iter()
            .position(|&l3| tree.is_within(place, l3))
            .expect("under an L3")
    };
    let mut used = Vec::new();
    for bubble in 0..4 {
        let (x, y) = (places[2 * bubble], places[2 * bubble + 1]);
        assert_ne!(x, y, "two cores");
        assert_eq!(
            l3_of(x),
            l3_of(y),
            "bubble {bubble} split over L3s: {places:?} ({ranges:?})"
        );
        used.push(l3_of(x));
    }
    used.sort_unstable();
    assert_eq!(used, vec![0, 1, 2, 3], "one bubble per L3");
    // a single bubble of two also stays in one L3
    let places = spread(&tree, &set, &[member(Some(0)), member(Some(0))], DEFAULT_REMOTE_COST);
    assert_eq!(l3_of(places[0]), l3_of(places[1]));
}

#[test]
fn entities_lighter_than_a_thirtieth_of_the_share_stay_at_the_parent() {
    let (layout, tree, _) = machine(2, 4, &[]);
    let set = BubbleSet::default();
    let mut members: Vec<Member> = (0..8).map(|_| member(None)).collect();
    members.push(Member {
        bubble: None,
        load: 0.01,
        priority: 0,
        previous: None,
    });
    let places = spread(&tree, &set, &members, DEFAULT_REMOTE_COST);
    assert_eq!(places[8], layout.whole(), "the light thread keeps the whole machine");
    assert!(places[..8].iter().all(|&p| layout.places()[p].kind == PlaceKind::Core));
}

#[test]
fn the_higher_priority_thread_keeps_a_core_to_itself() {
    let (_, tree, _) = machine(1, 2, &[]);
    let set = BubbleSet::default();
    for urgent in 0..3 {
        let members: Vec<Member> = (0..3)
            .map(|t| Member {
                bubble: None,
                load: 1.0,
                priority: if t == urgent { 5 } else { 0 },
                previous: None,
            })
            .collect();
        let places = spread(&tree, &set, &members, DEFAULT_REMOTE_COST);
        let sharing = places.iter().filter(|&&p| p == places[urgent]).count();
        assert_eq!(sharing, 1, "thread {urgent} shares its core: {places:?}");
    }
}

#[test]
fn an_uneven_three_three_two_split_is_evened_by_opening_the_smallest_bubble() {
    // Whole bubbles of 3, 3 and 2 on two nodes of four cores give 5 and 3:
    // one node over its CPUs while the other idles a core.
    let (layout, tree, ranges) = machine(2, 4, &[]);
    let set = bubbles(&[("a", None), ("b", None), ("c", None)]);
    let sizes = [3, 3, 2];
    let members: Vec<Member> = sizes
        .iter()
        .enumerate()
        .flat_map(|(b, &n)| std::iter::repeat_n(member(Some(b)), n))
        .collect();
    let places = spread(&tree, &set, &members, DEFAULT_REMOTE_COST);
    let nodes: Vec<usize> = places.iter().map(|&p| node_of(&layout, &ranges, p).unwrap()).collect();
    assert_eq!(nodes.iter().filter(|&&n| n == 0).count(), 4, "{nodes:?}");
    assert!(nodes[0..3].iter().all(|&n| n == nodes[0]), "a stays whole: {nodes:?}");
    assert!(nodes[3..6].iter().all(|&n| n == nodes[3]), "b stays whole: {nodes:?}");
    assert_ne!(nodes[6], nodes[7], "c, the smallest, is opened: {nodes:?}");
}

#[test]
fn a_bubble_no_node_can_hold_stays_whole_when_opening_it_gains_no_cpu() {
    // Two bubbles of two threads on two nodes of one core: either way every
    // node runs two threads, so each bubble stays on one node (its memory
    // with it) where remote memory costs more than local; where it costs
    // nothing (remote cost 1) the bubbles open, as before the share rule.
    let (layout, tree, ranges) = machine(2, 1, &[]);
    let set = bubbles(&[("a", None), ("b", None)]);
    let members: Vec<Member> = [0, 0, 1, 1].iter().map(|&b| member(Some(b))).collect();
    let nodes = |remote_cost: f64| -> Vec<usize> {
        spread(&tree, &set, &members, remote_cost)
            .iter()
            .map(|&p| node_of(&layout, &ranges, p).unwrap())
            .collect()
    };
    let kept = nodes(DEFAULT_REMOTE_COST);
    assert_eq!(kept[0], kept[1], "a stays whole: {kept:?}");
    assert_eq!(kept[2], kept[3], "b stays whole: {kept:?}");
    assert_ne!(kept[0], kept[2], "one bubble per node: {kept:?}");
    let opened = nodes(1.0);
    assert_ne!(opened[0], opened[1], "a opens where remote memory is free: {opened:?}");
    // A bubble heavier than its share still opens: three threads and one.
    let members: Vec<Member> = [0, 0, 0, 1].iter().map(|&b| member(Some(b))).collect();
    let places = spread(&tree, &set, &members, DEFAULT_REMOTE_COST);
    let loads = places.iter().fold([0, 0], |mut loads, &p| {
        loads[node_of(&layout, &ranges, p).unwrap()] += 1;
        loads
    });
    assert_eq!(loads, [2, 2], "{places:?}");
}

#[test]
fn a_burst_level_keeps_a_bubble_whole_down_to_its_level() {
    // Eight threads in one bubble on two nodes of four: without a level it
    // opens at the machine (it fits no node); with burst = node it stays on
    // one node, two threads per core.
    let (layout, tree, ranges) = machine(2, 4, &[]);
    let members: Vec<Member> = (0..8).map(|_| member(Some(0))).collect();
    let free = bubbles(&[("all", None)]);
    let places = spread(&tree, &free, &members, DEFAULT_REMOTE_COST);
    let nodes: std::collections::BTreeSet<_> = places.iter().map(|&p| node_of(&layout, &ranges, p)).collect();
    assert_eq!(nodes.len(), 2);
    let mut spec = BubbleSpec::new("all");
    spec.burst = Some(PlaceKind::Node);
    let held = BubbleSet::new(vec![spec]).unwrap();
    let places = spread(&tree, &held, &members, DEFAULT_REMOTE_COST);
    let nodes: std::collections::BTreeSet<_> = places.iter().map(|&p| node_of(&layout, &ranges, p)).collect();
    assert_eq!(nodes.len(), 1, "{places:?}");
}

#[test]
fn bad_bubble_sets_say_what_is_wrong() {
    let err = BubbleSet::new(vec![BubbleSpec::new("a").within("a")]).unwrap_err();
    assert!(matches!(err, BubbleError::Cycle(..)), "{err}");
    let err = BubbleSet::new(vec![BubbleSpec::new("a").within("b"), BubbleSpec::new("b").within("a")]).unwrap_err();
    assert!(err.to_string().contains("nested in itself"), "{err}");
    let err = BubbleSet::new(vec![BubbleSpec::new("a").within("zz")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "bubble \"a\" is nested in \"zz\", which is not declared"
    );
    let err = BubbleSet::new(vec![BubbleSpec::new("a"), BubbleSpec::new("a")]).unwrap_err();
    assert!(matches!(err, BubbleError::Twice(_)));
    let mut heavy = BubbleSpec::new("a");
    heavy.load = Some(f64::NAN);
    assert!(matches!(BubbleSet::new(vec![heavy]), Err(BubbleError::BadLoad(..))));
    // children declared before their parent are reordered, not refused
    let set = BubbleSet::new(vec![BubbleSpec::new("inner").within("outer"), BubbleSpec::new("outer")]).unwrap();
    assert_eq!(set.get(0).name, "outer");
    assert_eq!(set.get(1).parent, Some(0));
}

/// `--policy bubbles` with the guard off: every period is the bubbles'.
fn unguarded(layout: &Layout, tree: PlaceTree) -> BubblesPolicy {
    let no_guard = GuardConfig {
        enabled: false,
        ..GuardConfig::default()
    };
    BubblesPolicy::new(layout.clone(), tree, no_guard)
}

/// Period `period` at `time_s` with the threads' samples and the bubbles.
fn with_bubbles<'a>(
    period: u64,
    time_s: f64,
    threads: &'a [ThreadSample],
    bubbles: BubbleInput<'a>,
) -> PeriodInput<'a> {
    PeriodInput {
        bubbles: Some(bubbles),
        ..PeriodInput::of(period, time_s, threads)
    }
}

fn samples(keys: &[u64], quiet: &[u64]) -> Vec<ThreadSample> {
    keys.iter()
        .map(|&key| ThreadSample::of(key, (!quiet.contains(&key)).then_some(0.9)))
        .collect()
}

#[test]
fn the_policy_regenerates_once_a_group_blocks() {
    // a (4 threads) and b (4) fill the two nodes; c (2) does not fit beside
    // them whole and is opened. Once b's threads block, one regeneration
    // puts c back together on b's node: its thread sharing a CPU on a's node
    // moves to a free CPU, the only move between nodes a respread makes
    // (remote memory costing nothing here; see the next test).
    let (layout, tree, ranges) = machine(2, 4, &[]);
    let set = bubbles(&[("a", None), ("b", None), ("c", None)]);
    let mut policy = unguarded(&layout, tree).assuming_remote_cost(1.0);
    let keys: Vec<u64> = (0..10).collect();
    let of: Vec<Option<usize>> = keys
        .iter()
        .map(|&k| {
            Some(if k < 4 {
                0
            } else if k < 8 {
                1
            } else {
                2
            })
        })
        .collect();
    let node = |place: usize| node_of(&layout, &ranges, place);
    let mut decide = |period: u64, quiet: &[u64]| {
        let threads = samples(&keys, quiet);
        policy.decide(&with_bubbles(
            period,
            period as f64 * 0.05,
            &threads,
            BubbleInput {
                set: &set,
                of: &of,
                loads: &[],
                shakes: 0,
                processes: &[],
            },
        ))
    };
    let first = decide(0, &[]);
    assert_ne!(
        node(first.place[8]),
        node(first.place[9]),
        "c opened: {:?}",
        first.place
    );
    let b_node = node(first.place[4]);
    let blocked = [4, 5, 6, 7];
    let mut period = 1;
    let mut regenerated_at = None;
    while period < 1 + QUIET_PERIODS as u64 + REGENERATE_PERIODS + 1 {
        let d = decide(period, &blocked);
        if regenerated_at.is_none() && node(d.place[8]) == node(d.place[9]) {
            regenerated_at = Some(period);
            assert_eq!(
                node(d.place[8]),
                b_node,
                "c moves to the node b no longer uses: {:?}",
                d.place
            );
        }
        period += 1;
    }
    assert!(regenerated_at.is_some(), "c never came back together");
    assert_eq!(policy.regenerations(), 1);
}

#[test]
fn threads_seen_before_their_bubble_join_it_whole_once_it_is_known() {
    // A program's creators each start two leaves (the preload's thread
    // tree): a new thread runs for a moment before it joins its creator's
    // bubble, so the first period may see threads with no bubble yet. Two
    // families of three (creator, two leaves) on two one-core nodes: once
    // the bubbles are known, each family is on a node of its own, whatever
    // the first period made of what it saw (both cases seen live).
    let (layout, tree, ranges) = machine(2, 1, &[]);
    let family = [("main", None), ("fam0", Some("main")), ("fam1", Some("main"))];
    let node = |place: usize| node_of(&layout, &ranges, place);
    let period = |policy: &mut BubblesPolicy, period: u64, set: &BubbleSet, of: &[Option<usize>]| {
        let keys: Vec<u64> = (0..of.len() as u64).collect();
        let threads = samples(&keys, &[]);
        let input = BubbleInput {
            set,
            of,
            loads: &[],
            shakes: 0,
            processes: &[],
        };
        policy
            .decide(&with_bubbles(period, period as f64 * 0.05, &threads, input))
            .place
    };
    // (bubbles known at period 0, each thread's bubble then, each one's after)
    type Bubbles<'a> = &'a [Option<usize>];
    let cases: [(usize, Bubbles, Bubbles); 2] = [
        // fam0's leaves and fam1's creator not in a bubble yet, fam1's leaves unseen
        (
            2,
            &[Some(0), Some(1), None, None, None],
            &[Some(0), Some(1), Some(1), Some(1), Some(2), Some(2), Some(2)],
        ),
        // both creators in their bubbles, all four leaves not yet
        (
            3,
            &[Some(0), Some(1), Some(2), None, None, None, None],
            &[Some(0), Some(1), Some(2), Some(1), Some(1), Some(2), Some(2)],
        ),
    ];
    for (known, first, after) in cases {
        let mut policy = unguarded(&layout, tree.clone());
        period(&mut policy, 0, &bubbles(&family[..known]), first);
        let all = bubbles(&family);
        for p in 1..=u64::from(SETTLING_PERIODS) + 2 {
            let place = period(&mut policy, p, &all, after);
            let nodes_of = |bubble: usize| -> std::collections::BTreeSet<_> {
                (0..after.len())
                    .filter(|&t| after[t] == Some(bubble))
                    .map(|t| node(place[t]))
                    .collect()
            };
            let (fam0, fam1) = (nodes_of(1), nodes_of(2));
            assert_eq!(fam0.len(), 1, "period {p}: fam0 whole: {place:?} ({first:?})");
            assert_eq!(fam1.len(), 1, "period {p}: fam1 whole: {place:?} ({first:?})");
            assert!(
                fam0.is_disjoint(&fam1) && !fam0.contains(&None),
                "one family per node: {place:?}"
            );
        }
    }
}

#[test]
fn a_thread_leaves_its_node_only_where_sharing_a_cpu_costs_more_than_remote_memory() {
    // Six threads placed on node 0 (two cores: three per CPU), node 1 (two
    // cores) empty. A respread moves a thread to node 1 only while node 0
    // holds at least `remote_cost` threads per CPU, and never more than
    // node 1's CPUs.
    let (layout, tree, _) = machine(2, 2, &[]);
    let node0_cores: Vec<usize> = layout.all_cores().take(2).collect();
    let members: Vec<Member> = (0..6)
        .map(|i| Member {
            previous: Some(node0_cores[i % 2]),
            ..member(None)
        })
        .collect();
    let moved = |cost: f64| {
        spread(&tree, &BubbleSet::default(), &members, cost)
            .iter()
            .filter(|place| !node0_cores.contains(place))
            .count()
    };
    assert_eq!(moved(4.0), 0, "3 per CPU at home beats remote memory 4x slower");
    assert_eq!(moved(3.0), 1, "3 per CPU at home: one leaves, then 2.5 per CPU stay");
    assert_eq!(moved(2.0), 2, "node 1 takes two, one per CPU");
    assert_eq!(moved(1.0), 2);
    assert_eq!(moved(DEFAULT_REMOTE_COST), 2);
    // A first spread (no thread placed yet) has no memory to leave.
    let fresh: Vec<Member> = (0..6).map(|_| member(None)).collect();
    let on_node0 = spread(&tree, &BubbleSet::default(), &fresh, 4.0)
        .iter()
        .filter(|place| node0_cores.contains(place))
        .count();
    assert_eq!(on_node0, 3, "three per node");
}

#[test]
fn a_regeneration_evens_out_the_cores_of_a_node() {
    // Five threads on one node of four cores: two share a core. Once a
    // thread alone on its core blocks, one regeneration gives each of the
    // four still running a core of its own. With learning too: a thread
    // holds its core only while the spread keeps its place (it measured no
    // share here, so no crowd move would even them out).
    let (layout, tree, _) = machine(1, 4, &[]);
    let no_guard = GuardConfig {
        enabled: false,
        ..GuardConfig::default()
    };
    let learning = BubblesPolicy::with_learning(layout.clone(), tree.clone(), no_guard, CrowdConfig::default());
    for mut policy in [unguarded(&layout, tree), learning] {
        let keys: Vec<u64> = (0..5).collect();
        let first = policy.decide(&PeriodInput::of(0, 0.0, &samples(&keys, &[])));
        let shared = (0..5)
            .find(|&i| first.place.iter().filter(|&&p| p == first.place[i]).count() == 2)
            .expect("two threads share a core");
        let lonely = (0..5)
            .find(|&i| first.place.iter().filter(|&&p| p == first.place[i]).count() == 1)
            .expect("a thread alone on its core") as u64;
        let mut last = first.clone();
        for period in 1..2 + QUIET_PERIODS as u64 + REGENERATE_PERIODS {
            last = policy.decide(&PeriodInput::of(
                period,
                period as f64 * 0.05,
                &samples(&keys, &[lonely]),
            ));
        }
        let running: std::collections::BTreeSet<_> =
            (0..5).filter(|&i| i as u64 != lonely).map(|i| last.place[i]).collect();
        assert_eq!(
            running.len(),
            4,
            "{}: one core each: {:?} (first {:?}, {shared} shared)",
            policy.name(),
            last.place,
            first.place
        );
        assert_eq!(policy.regenerations(), 1);
    }
}

/// A random machine: nodes, cores per node, and whether each node splits
/// into two L3s.
fn arb_machine() -> impl Strategy<Value = (usize, usize, bool)> {
    (1usize..=4, 1usize..=8, any::<bool>()).prop_map(|(n, c, l3)| (n, c, l3 && c % 2 == 0 && c >= 2))
}

fn build(nodes: usize, cores: usize, l3: bool) -> (Layout, PlaceTree, Vec<Range<usize>>) {
    let groups: Vec<(PlaceKind, Range<usize>)> = if l3 {
        (0..nodes * 2)
            .map(|i| (PlaceKind::L3, i * cores / 2..(i + 1) * cores / 2))
            .collect()
    } else {
        Vec::new()
    };
    machine(nodes, cores, &groups)
}

/// Bubbles nested up to three deep: bubble i's parent is an earlier bubble or none.
fn arb_bubbles() -> impl Strategy<Value = Vec<Option<usize>>> {
    prop::collection::vec(any::<prop::sample::Index>(), 0..6).prop_map(|picks| {
        picks
            .iter()
            .enumerate()
            .map(|(i, pick)| {
                if i == 0 {
                    None
                } else {
                    Some(pick.index(i + 1)).filter(|&p| p < i)
                }
            })
            .collect()
    })
}

fn set_of(parents: &[Option<usize>]) -> BubbleSet {
    BubbleSet::new(
        parents
            .iter()
            .enumerate()
            .map(|(i, parent)| {
                let spec = BubbleSpec::new(format!("b{i}"));
                match parent {
                    Some(p) => spec.within(format!("b{p}")),
                    None => spec,
                }
            })
            .collect(),
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_thread_gets_one_place_of_the_tree_and_the_same_inputs_give_the_same_places(
        (nodes, cores, l3) in arb_machine(),
        parents in arb_bubbles(),
        threads in prop::collection::vec((any::<prop::sample::Index>(), 0u8..4, -2i32..3), 0..40),
    ) {
        let (layout, tree, _) = build(nodes, cores, l3);
        let set = set_of(&parents);
        let members: Vec<Member> = threads
            .iter()
            .map(|(pick, load, priority)| Member {
                bubble: if set.is_empty() { None } else { Some(pick.index(set.len() + 1)).filter(|&b| b < set.len()) },
                load: f64::from(*load) / 2.0,
                priority: *priority,
                previous: None,
            })
            .collect();
        // The children of every place share its CPUs out among them.
        for place in 0..layout.places().len() {
            let children = tree.children(place);
            if !children.is_empty() {
                let sum: usize = children.iter().map(|&c| tree.cpus(c)).sum();
                prop_assert_eq!(sum, tree.cpus(place), "children {:?} of place {}", children, place);
            }
        }
        let places = spread(&tree, &set, &members, DEFAULT_REMOTE_COST);
        prop_assert_eq!(places.len(), members.len());
        for &place in &places {
            prop_assert!(place < layout.places().len());
            prop_assert!(tree.is_within(place, tree.root()), "place {} is not in the tree", place);
        }
        prop_assert_eq!(spread(&tree, &set, &members, DEFAULT_REMOTE_COST), places);
    }

    #[test]
    fn spreading_threads_again_from_their_places_moves_nothing(
        (nodes, cores, l3) in arb_machine(),
        loads in prop::collection::vec(0u8..4, 0..40),
    ) {
        // Threads in no bubble: a respread with nothing changed is a fixed
        // point (with bubbles it need not be: a bubble opened to even out
        // the children may come back whole; see the golden tests).
        let (_, tree, _) = build(nodes, cores, l3);
        let set = BubbleSet::default();
        let mut members: Vec<Member> = loads
            .iter()
            .map(|&load| Member { bubble: None, load: f64::from(load) / 2.0, priority: 0, previous: None })
            .collect();
        let first = spread(&tree, &set, &members, DEFAULT_REMOTE_COST);
        for (member, &place) in members.iter_mut().zip(&first) {
            member.previous = Some(place);
        }
        prop_assert_eq!(spread(&tree, &set, &members, DEFAULT_REMOTE_COST), first);
    }

    #[test]
    fn bubbles_that_each_fit_a_node_are_never_split_over_nodes(
        (nodes, cores, l3) in arb_machine(),
        sizes in prop::collection::vec(1usize..=8, 1..=4),
    ) {
        // No more bubbles than nodes, each at most a node's worth of threads,
        // no other threads: every bubble ends within one node.
        prop_assume!(sizes.len() <= nodes);
        let sizes: Vec<usize> = sizes.iter().map(|&s| s.min(cores)).collect();
        let (layout, tree, ranges) = build(nodes, cores, l3);
        let set = set_of(&vec![None; sizes.len()]);
        let members: Vec<Member> = sizes
            .iter()
            .enumerate()
            .flat_map(|(b, &n)| std::iter::repeat_n(member(Some(b)), n))
            .collect();
        let places = spread(&tree, &set, &members, DEFAULT_REMOTE_COST);
        for bubble in 0..sizes.len() {
            let nodes_of: std::collections::BTreeSet<_> = members
                .iter()
                .zip(&places)
                .filter(|(m, _)| m.bubble == Some(bubble))
                .map(|(_, &p)| node_of(&layout, &ranges, p))
                .collect();
            prop_assert_eq!(nodes_of.len(), 1, "bubble {} of {:?} split: {:?}", bubble, sizes, places);
            prop_assert!(nodes_of.iter().all(Option::is_some));
        }
    }
}

#[test]
fn entities_without_load_are_spread_too() {
    // Blocked threads (load 0) in two bubbles: no share tells the nodes
    // apart, so the count of entities does.
    let (layout, tree, ranges) = machine(2, 2, &[]);
    let set = bubbles(&[("a", None), ("b", None)]);
    let members: Vec<Member> = (0..4)
        .map(|t| Member {
            bubble: Some(t / 2),
            load: 0.0,
            priority: 0,
            previous: None,
        })
        .collect();
    let places = spread(&tree, &set, &members, DEFAULT_REMOTE_COST);
    let nodes: Vec<_> = places.iter().map(|&p| node_of(&layout, &ranges, p)).collect();
    assert_eq!(nodes[0], nodes[1]);
    assert_eq!(nodes[2], nodes[3]);
    assert_ne!(nodes[0], nodes[2], "{places:?}");
}

#[test]
fn the_bubbles_place_first_even_when_the_guard_would_start_with_linux() {
    // Memory is first touched where a thread first runs: the spread must
    // come before Linux's windows, whatever `first` says, wherever remote
    // memory costs more than local; where it costs nothing, `first` holds.
    let (layout, tree, _) = machine(2, 2, &[]);
    let guard = GuardConfig {
        first: pinlearn_policy::Arm::Os,
        ..GuardConfig::default()
    };
    let set = bubbles(&[("a", None)]);
    let threads = samples(&[1, 2], &[]);
    let first_places = |policy: BubblesPolicy| {
        let mut policy = policy;
        policy
            .decide(&with_bubbles(
                0,
                0.0,
                &threads,
                BubbleInput {
                    set: &set,
                    of: &[Some(0), Some(0)],
                    loads: &[],
                    shakes: 0,
                    processes: &[],
                },
            ))
            .place
    };
    for cost in [DEFAULT_REMOTE_COST, 1.5] {
        let places = first_places(BubblesPolicy::new(layout.clone(), tree.clone(), guard).assuming_remote_cost(cost));
        assert!(
            places.iter().all(|&p| layout.places()[p].kind == PlaceKind::Core),
            "remote cost {cost}: {places:?}"
        );
    }
    let places = first_places(BubblesPolicy::new(layout.clone(), tree, guard).assuming_remote_cost(1.0));
    assert_eq!(places, vec![layout.whole(); 2], "remote memory free: Linux first");
}

#[test]
fn a_bubble_whose_level_is_missing_from_its_branch_opens_where_the_branch_lacks_it() {
    // Only node 1 has L3s; a bubble held to the L3 level that lands on
    // node 0 must still open there (not pile its threads on one core).
    let (layout, tree, ranges) = machine(2, 4, &[(PlaceKind::L3, 4..6), (PlaceKind::L3, 6..8)]);
    let mut spec = BubbleSpec::new("a");
    spec.burst = Some(PlaceKind::L3);
    let set = BubbleSet::new(vec![spec]).unwrap();
    let members: Vec<Member> = (0..4).map(|_| member(Some(0))).collect();
    let places = spread(&tree, &set, &members, DEFAULT_REMOTE_COST);
    let mut cores = places.clone();
    cores.sort_unstable();
    cores.dedup();
    assert_eq!(cores.len(), 4, "one thread per core: {places:?}");
    assert!(places.iter().all(|&p| layout.places()[p].kind == PlaceKind::Core));
    assert!(
        places.iter().all(|&p| node_of(&layout, &ranges, p) == Some(0)),
        "{places:?}"
    );
}

#[test]
fn a_regeneration_keeps_bubbles_where_they_were_when_that_costs_nothing() {
    // Two processes, one per node; their main threads block (load 0) and
    // the spread runs again: nobody changes node, though node order alone
    // (the greedy's first tie-break) would swap them.
    let (layout, tree, ranges) = machine(2, 4, &[]);
    let set = bubbles(&[("p1", None), ("p2", None)]);
    let (p1, p2) = (set.index("p1"), set.index("p2"));
    let mut members: Vec<Member> = [p2, p2, p2, p1, p1, p1]
        .into_iter()
        .map(|bubble| Member {
            bubble,
            load: 1.0,
            priority: 0,
            previous: None,
        })
        .collect();
    let node = |p: usize| node_of(&layout, &ranges, p);
    let first = spread(&tree, &set, &members, DEFAULT_REMOTE_COST);
    let first_nodes: Vec<_> = first.iter().map(|&p| node(p)).collect();
    assert_ne!(first_nodes[0], first_nodes[3], "one process per node: {first:?}");
    for (member, &place) in members.iter_mut().zip(&first) {
        member.previous = Some(place);
    }
    // p1 loses two threads' worth of load: p2 is now heavier and would go
    // first, to node 0, were it not already on node 1.
    members[3].load = 0.0;
    members[4].load = 0.0;
    let again = spread(&tree, &set, &members, DEFAULT_REMOTE_COST);
    for t in 0..6 {
        assert_eq!(
            node(again[t]),
            first_nodes[t],
            "thread {t} changed node: {first:?} -> {again:?}"
        );
    }
    // Without the places of the first spread, the order does swap them.
    for member in &mut members {
        member.previous = None;
    }
    let fresh = spread(&tree, &set, &members, DEFAULT_REMOTE_COST);
    assert_ne!(
        node(fresh[3]),
        first_nodes[3],
        "the test must exercise the preference: {fresh:?}"
    );
}

#[test]
fn a_shake_spreads_afresh_as_if_nothing_were_placed() {
    let (layout, tree, _) = machine(2, 1, &[]);
    let set = BubbleSet::default();
    let decide = |policy: &mut BubblesPolicy, period: u64, keys: &[u64], shakes: u64| {
        let threads = samples(keys, &[]);
        let of = vec![None; keys.len()];
        policy
            .decide(&PeriodInput {
                bubbles: Some(BubbleInput {
                    set: &set,
                    of: &of,
                    loads: &[],
                    shakes,
                    processes: &[],
                }),
                ..PeriodInput::of(period, period as f64 * 0.05, &threads)
            })
            .place
    };
    let mut policy = BubblesPolicy::new(layout.clone(), tree.clone(), GuardConfig::default());
    decide(&mut policy, 0, &[1, 2], 0);
    // Thread 1 ends and 3 starts: 2 keeps its core, 3 takes the other.
    let kept = decide(&mut policy, 1, &[2, 3], 0);
    let mut fresh = BubblesPolicy::new(layout, tree, GuardConfig::default());
    let afresh = decide(&mut fresh, 0, &[2, 3], 0);
    assert_ne!(kept, afresh, "the scenario must tell a sticky spread from a fresh one");
    assert_eq!(decide(&mut policy, 2, &[2, 3], 0), kept, "no shake: nothing moves");
    assert_eq!(decide(&mut policy, 3, &[2, 3], 1), afresh, "a shake spreads afresh");
    assert_eq!(decide(&mut policy, 4, &[2, 3], 1), afresh, "once");
}

#[test]
fn bubbles_and_learning_move_a_thread_off_a_loaded_core_inside_its_bubble_s_node() {
    // One node of 4 cores; a bubble of two threads is spread on two cores.
    // Another program loads the first thread's core (run share 0.5): with
    // learning it moves to a free core of the node, plain bubbles keep it.
    let (layout, tree, _) = machine(1, 4, &[]);
    let set = bubbles(&[("a", None)]);
    let of = [Some(0), Some(0)];
    let no_guard = GuardConfig {
        enabled: false,
        ..GuardConfig::default()
    };
    let run = |mut policy: BubblesPolicy| -> Vec<Vec<usize>> {
        (0..3u64)
            .map(|period| {
                // After the move both threads have a core to themselves.
                let shares = match period {
                    0 => [None, None],
                    1 => [Some(0.5), Some(1.0)],
                    _ => [Some(1.0), Some(1.0)],
                };
                let threads: Vec<ThreadSample> = [1u64, 2]
                    .iter()
                    .zip(shares)
                    .map(|(&key, share)| ThreadSample {
                        key,
                        speed: Some(0.5),
                        share,
                        grain_s: None,
                        worked: None,
                    })
                    .collect();
                policy
                    .decide(&with_bubbles(
                        period,
                        period as f64 * 0.05,
                        &threads,
                        BubbleInput {
                            set: &set,
                            of: &of,
                            loads: &[],
                            shakes: 0,
                            processes: &[],
                        },
                    ))
                    .place
            })
            .collect()
    };
    let plain = run(BubblesPolicy::new(layout.clone(), tree.clone(), no_guard));
    let learning = BubblesPolicy::with_learning(layout.clone(), tree, no_guard, CrowdConfig::default());
    assert_eq!(learning.name(), "bubbles+learn");
    let learned = run(learning);
    assert_eq!(plain[0], learned[0], "the same first places: {plain:?} {learned:?}");
    assert!(plain[0].iter().all(|&p| layout.is_core(p)), "{plain:?}");
    assert_eq!(plain[2], plain[0], "plain bubbles never move: {plain:?}");
    let loaded = learned[0][0];
    assert_ne!(learned[1][0], loaded, "the loaded thread moves: {learned:?}");
    assert!(
        layout.is_core(learned[1][0]) && learned[1][0] != learned[1][1],
        "{learned:?}"
    );
    assert_eq!(learned[1][1], learned[0][1], "the thread alone stays: {learned:?}");
    assert_eq!(learned[2], learned[1], "and then nothing moves: {learned:?}");
}

#[test]
fn a_thread_declared_to_weigh_nothing_stays_high_and_a_change_respreads_at_once() {
    // Five threads on four cores: the first, declared at load 0 (a parent
    // waiting for its children), stays on the whole machine and leaves
    // the four cores to the others from the very first spread, before any
    // period has shown it blocked. Declaring nothing again gives it a core
    // at the next period.
    let (layout, tree, ranges) = machine(2, 2, &[]);
    let mut policy = unguarded(&layout, tree);
    let set = BubbleSet::default();
    let keys = [1, 2, 3, 4, 5];
    let of = [None; 5];
    let mut decide = |period: u64, loads: &[Option<f64>]| {
        let threads = samples(&keys, &[]);
        policy.decide(&with_bubbles(
            period,
            period as f64 * 0.05,
            &threads,
            BubbleInput {
                set: &set,
                of: &of,
                loads,
                shakes: 0,
                processes: &[],
            },
        ))
    };
    let waiting = [Some(0.0), None, None, None, None];
    let first = decide(0, &waiting);
    assert_eq!(ranges[first.place[0]], 0..4, "{:?}", first.place);
    let worker_cores: std::collections::BTreeSet<_> = first.place[1..]
        .iter()
        .map(|&p| {
            assert_eq!(layout.places()[p].kind, PlaceKind::Core, "{:?}", first.place);
            p
        })
        .collect();
    assert_eq!(worker_cores.len(), 4, "one worker per core: {:?}", first.place);
    assert_eq!(decide(1, &waiting).place, first.place, "nothing changed, nothing moves");
    let counted = decide(2, &[None; 5]);
    assert_eq!(
        layout.places()[counted.place[0]].kind,
        PlaceKind::Core,
        "counted again at once: {:?}",
        counted.place
    );
}

#[test]
fn bubbles_whose_threads_are_spread_over_nodes_are_placed_apart_when_gathered() {
    // Threads first placed one per core before their names put them in
    // bubbles (heat-0..3 on two one-core nodes): each bubble has a thread
    // on each node, so neither node is "where it is"; gathering them must
    // not put both bubbles on the first node.
    let (layout, tree, ranges) = machine(2, 1, &[]);
    let mut specs = vec![BubbleSpec::new("top"), BubbleSpec::new("bottom")];
    for spec in &mut specs {
        spec.burst = Some(PlaceKind::Node);
    }
    let set = BubbleSet::new(specs).unwrap();
    // machine(): node n of one core has its core at place 2n.
    let core = |node: usize| 2 * node;
    assert_eq!(ranges[core(1)], 1..2);
    let members: Vec<Member> = [(0, 0), (0, 1), (1, 0), (1, 1)]
        .iter()
        .map(|&(bubble, node)| Member {
            previous: Some(core(node)),
            ..member(Some(bubble))
        })
        .collect();
    let places = spread(&tree, &set, &members, DEFAULT_REMOTE_COST);
    let node = |t: usize| node_of(&layout, &ranges, places[t]);
    assert_eq!(node(0), node(1), "top gathered: {places:?}");
    assert_eq!(node(2), node(3), "bottom gathered: {places:?}");
    assert_ne!(node(0), node(2), "the bubbles on different nodes: {places:?}");
}

/// `bubbles+learn` on two nodes of `cores` cores, another program loading
/// every core of node 0 (a thread there runs half the time). Threads 1, 2,
/// ... (`of`: their bubbles in `names`, `processes`: their processes);
/// threads 1 and 2 are bubble `a`, spread on node 0, and run at
/// `speed_on_1` on node 1 (below 0.5: their memory stayed behind and costs
/// more than the CPU they gained); the others run at full speed anywhere.
/// A NUMA tick every 4 periods; returns the node of threads 1 and 2 after
/// every period, and the bubble moves made and undone.
fn numa_run_on(
    cores: usize,
    names: &[&str],
    of: &[Option<usize>],
    processes: &[u32],
    memory_follows: bool,
    speed_on_1: f64,
    periods: u64,
) -> (Vec<[Option<usize>; 2]>, (u64, u64)) {
    let (layout, tree, ranges) = machine(2, cores, &[]);
    let no_guard = GuardConfig {
        enabled: false,
        ..GuardConfig::default()
    };
    let mut policy = BubblesPolicy::with_learning(layout.clone(), tree, no_guard, CrowdConfig::default())
        .with_memory_following(memory_follows);
    let set = bubbles(&names.iter().map(|&name| (name, None)).collect::<Vec<_>>());
    let keys: Vec<u64> = (1..=of.len() as u64).collect();
    let mut places: Vec<Option<usize>> = vec![None; keys.len()];
    let mut history = Vec::new();
    for period in 0..periods {
        let threads: Vec<ThreadSample> = keys
            .iter()
            .zip(&places)
            .map(|(&key, place)| {
                let node = place.and_then(|p| node_of(&layout, &ranges, p));
                let (speed, share) = match (key, node) {
                    (_, None) => (None, None),
                    (1 | 2, Some(0)) => (Some(0.5), Some(0.5)),
                    (1 | 2, Some(_)) => (Some(speed_on_1), Some(1.0)),
                    (_, Some(_)) => (Some(1.0), Some(1.0)),
                };
                ThreadSample {
                    key,
                    speed,
                    share,
                    grain_s: None,
                    worked: None,
                }
            })
            .collect();
        let input = PeriodInput {
            numa_tick: period % 4 == 3,
            ..with_bubbles(
                period,
                period as f64 * 0.05,
                &threads,
                BubbleInput {
                    set: &set,
                    of,
                    loads: &[],
                    shakes: 0,
                    processes,
                },
            )
        };
        let decision = policy.decide(&input);
        places = decision.place.iter().map(|&p| Some(p)).collect();
        assert!(
            decision.place.iter().all(|&p| layout.is_core(p)),
            "{:?}",
            decision.place
        );
        history.push([0, 1].map(|i| node_of(&layout, &ranges, decision.place[i])));
    }
    (history, policy.bubble_moves())
}

/// [`numa_run_on`] with two cores per node, bubble `a` a process of its
/// own and, with `b_on_node_1`, bubble `b` (another process) on node 1.
fn numa_run(
    memory_follows: bool,
    b_on_node_1: bool,
    speed_on_1: f64,
    periods: u64,
) -> (Vec<[Option<usize>; 2]>, (u64, u64)) {
    if b_on_node_1 {
        let of = [Some(0), Some(0), Some(1), Some(1)];
        numa_run_on(
            2,
            &["a", "b"],
            &of,
            &[10, 10, 20, 20],
            memory_follows,
            speed_on_1,
            periods,
        )
    } else {
        numa_run_on(
            2,
            &["a"],
            &[Some(0), Some(0)],
            &[10, 10],
            memory_follows,
            speed_on_1,
            periods,
        )
    }
}

#[test]
fn the_numa_level_moves_a_whole_bubble_off_a_loaded_node_and_keeps_it_where_it_runs_faster() {
    let (history, moves) = numa_run(true, false, 1.0, 40);
    assert_eq!(
        history[0],
        [Some(0), Some(0)],
        "the spread keeps the bubble whole on node 0"
    );
    // The first tick (period 3) has measured node 0: both threads move at once.
    assert_eq!(history[2], [Some(0), Some(0)], "{history:?}");
    assert_eq!(history[3], [Some(1), Some(1)], "{history:?}");
    assert!(
        history[3..].iter().all(|n| *n == [Some(1), Some(1)]),
        "kept: {history:?}"
    );
    assert_eq!(moves, (1, 0));
}

#[test]
fn a_bubble_that_runs_slower_on_the_new_node_goes_back_and_leaves_that_node_alone() {
    // Memory said to follow, but the threads run at 0.3 there (it did not).
    let (history, moves) = numa_run(true, false, 0.3, 4 * (BAR_TICKS + 3));
    assert_eq!(history[3], [Some(1), Some(1)], "tried: {history:?}");
    // Judged at the next tick (period 7) and moved back.
    assert_eq!(history[7], [Some(0), Some(0)], "undone: {history:?}");
    // Barred for BAR_TICKS ticks (4 periods each), then tried again, and
    // undone again.
    let barred = 7 + 4 * BAR_TICKS as usize;
    assert!(
        history[7..barred].iter().all(|n| *n == [Some(0), Some(0)]),
        "barred: {history:?}"
    );
    assert_eq!(history[barred], [Some(1), Some(1)], "tried again: {history:?}");
    assert_eq!(moves, (2, 2));
}

#[test]
fn a_bubble_stays_where_its_memory_would_be_left_behind_for_less_than_the_remote_cost() {
    // Node 1 promises twice the share; without its memory a thread there
    // runs up to remote_cost (2 by default) slower: not worth a trial.
    let (history, moves) = numa_run(false, false, 1.0, 40);
    assert!(history.iter().all(|n| *n == [Some(0), Some(0)]), "{history:?}");
    assert_eq!(moves, (0, 0));
}

#[test]
fn a_bubble_does_not_move_onto_a_node_the_program_already_fills() {
    // Node 1 holds bubble b on both its cores: a's threads would share them
    // (a half each, no more than on node 0) and cost b its CPU.
    let (history, moves) = numa_run(true, true, 1.0, 40);
    assert!(history.iter().all(|n| *n == [Some(0), Some(0)]), "{history:?}");
    assert_eq!(moves, (0, 0));
}

#[test]
fn a_bubble_inside_a_larger_process_leaves_its_memory_behind_and_stays() {
    // Three cores per node: bubble a (threads 1 and 2) on node 0, thread 3
    // (no bubble) on node 1, which keeps two cores free. Memory binding is
    // on. As a process of its own, a moves to node 1 with its memory; as
    // two of the three threads of one process, its memory would stay (the
    // process's follows most of its threads), the move would cost the
    // remote cost (2 by default), and a stays.
    let of = [Some(0), Some(0), None];
    let (history, moves) = numa_run_on(3, &["a"], &of, &[10, 10, 20], true, 1.0, 40);
    assert_eq!(history[3], [Some(1), Some(1)], "a whole process moves: {history:?}");
    assert_eq!(moves, (1, 0));
    let (history, moves) = numa_run_on(3, &["a"], &of, &[10, 10, 10], true, 1.0, 40);
    assert!(history.iter().all(|n| *n == [Some(0), Some(0)]), "{history:?}");
    assert_eq!(moves, (0, 0));
}
