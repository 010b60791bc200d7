//! The places of a layout as a tree: each place's parent is the smallest
//! place holding all of its CPUs.
//!
//! ```text
//!   Layout (places, no CPU numbers)  +  contains(outer, inner) from the caller
//!      │ PlaceTree::new: keep the places that nest (every two are nested or
//!      │                 disjoint), parent = smallest strict superset
//!      ▼
//!   machine ─┬─ package 0 ─┬─ node 0 ─┬─ core ...     (levels a machine
//!            │             │          └─ core          lacks are skipped;
//!            │             └─ node 1 ─ ...             an L3 can sit above
//!            └─ package 1 ─ ...                        or below a node)
//! ```
//!
//! The caller knows the CPUs (the engine's `Places`, the simulator's
//! machine) and answers `contains`; the tree itself stays free of CPU
//! numbers like the rest of this crate. A group that overlaps another place
//! without nesting (an L3 shared by half of two nodes) cannot be a tree
//! node: it is left out and listed in [`PlaceTree::left_out`]. The cores
//! partition every place, so the children of a place partition its CPUs.

use crate::layout::{Layout, PlaceKind};

/// The nesting of a layout's places.
#[derive(Clone, Debug, PartialEq)]
pub struct PlaceTree {
    root: usize,
    parent: Vec<Option<usize>>,
    children: Vec<Vec<usize>>,
    kinds: Vec<PlaceKind>,
    cpus: Vec<usize>,
    left_out: Vec<usize>,
    /// Per place, the kinds of the places in its subtree (itself included),
    /// one bit per [`PlaceKind::LEVELS`] entry.
    kinds_below: Vec<u8>,
}

fn level_bit(kind: PlaceKind) -> u8 {
    let rank = PlaceKind::LEVELS
        .iter()
        .position(|(k, _)| *k == kind)
        .expect("every kind has a level");
    1 << rank
}

impl PlaceTree {
    /// Builds the tree of `layout`'s places. `contains(outer, inner)` must say
    /// whether every CPU of place `inner` is in place `outer` (true when
    /// they are equal).
    pub fn new(layout: &Layout, contains: impl Fn(usize, usize) -> bool) -> Self {
        let places = layout.places();
        let count = places.len();
        let overlap = |a: usize, b: usize| {
            // Two places share a CPU iff one holds a core of the other; cores
            // partition the machine, so test through the cores.
            layout.all_cores().any(|core| contains(a, core) && contains(b, core))
        };
        // Widest first; places with the same CPUs (a node of one core and
        // that core) go outer level first.
        let rank = |kind: PlaceKind| PlaceKind::LEVELS.iter().position(|(k, _)| *k == kind);
        let mut order: Vec<usize> = (0..count).collect();
        order.sort_by_key(|&place| (std::cmp::Reverse(places[place].cpus), rank(places[place].kind), place));
        // Cores, nodes and the machine always nest; each group must nest
        // with all of them and with the groups kept before it.
        let mut kept: Vec<usize> = order.iter().copied().filter(|&p| !places[p].kind.is_group()).collect();
        let mut left_out = Vec::new();
        for &place in order.iter().filter(|&&p| places[p].kind.is_group()) {
            let nests = kept
                .iter()
                .all(|&other| contains(other, place) || contains(place, other) || !overlap(place, other));
            if nests {
                kept.push(place);
            } else {
                left_out.push(place);
            }
        }
        let position_in_order: Vec<usize> = {
            let mut at = vec![0; count];
            for (position, &place) in order.iter().enumerate() {
                at[place] = position;
            }
            at
        };
        kept.sort_by_key(|&place| position_in_order[place]);
        left_out.sort_unstable();
        let mut parent = vec![None; count];
        for (position, &place) in kept.iter().enumerate() {
            // The kept places wider than `place` (or as wide, of an outer
            // level) come before it in `kept`; the last of them holding it is
            // the smallest.
            parent[place] = kept[..position]
                .iter()
                .rev()
                .find(|&&outer| contains(outer, place))
                .copied();
        }
        let root = layout.whole();
        let mut children = vec![Vec::new(); count];
        for &place in &kept {
            if let Some(up) = parent[place] {
                children[up].push(place);
            }
        }
        for list in &mut children {
            list.sort_unstable();
        }
        debug_assert!(parent[root].is_none(), "the whole place has no parent");
        let mut kinds_below: Vec<u8> = places.iter().map(|p| level_bit(p.kind)).collect();
        // Narrowest first, so every child is done before its parent.
        for &place in kept.iter().rev() {
            if let Some(up) = parent[place] {
                kinds_below[up] |= kinds_below[place];
            }
        }
        PlaceTree {
            root,
            parent,
            children,
            kinds: places.iter().map(|p| p.kind).collect(),
            cpus: places.iter().map(|p| p.cpus).collect(),
            left_out,
            kinds_below,
        }
    }

    /// The tree of a layout of cores, nodes and machine only (no package,
    /// die or L3 places), whose nesting follows from each place's node.
    ///
    /// # Panics
    /// If the layout has group places.
    pub fn without_groups(layout: &Layout) -> Self {
        let places = layout.places();
        assert!(
            places.iter().all(|p| !p.kind.is_group()),
            "a layout with groups needs the CPU sets"
        );
        Self::new(layout, |outer, inner| {
            outer == inner
                || places[outer].kind == PlaceKind::Machine
                || (places[outer].kind == PlaceKind::Node && places[outer].node == places[inner].node)
        })
    }

    /// The place spanning every CPU.
    pub fn root(&self) -> usize {
        self.root
    }

    /// The places right below `place`, by index; empty for a core.
    pub fn children(&self, place: usize) -> &[usize] {
        &self.children[place]
    }

    /// The smallest place holding `place`; `None` for the root and for
    /// places left out of the tree.
    pub fn parent(&self, place: usize) -> Option<usize> {
        self.parent[place]
    }

    pub fn kind(&self, place: usize) -> PlaceKind {
        self.kinds[place]
    }

    /// Number of CPUs of `place`.
    pub fn cpus(&self, place: usize) -> usize {
        self.cpus[place]
    }

    /// Groups that overlap another place without nesting in it.
    pub fn left_out(&self) -> &[usize] {
        &self.left_out
    }

    /// True when some place of the tree is of `kind`.
    pub fn has_level(&self, kind: PlaceKind) -> bool {
        self.places_at(kind).next().is_some()
    }

    /// The places of the tree of `kind`, by index.
    pub fn places_at(&self, kind: PlaceKind) -> impl Iterator<Item = usize> + '_ {
        (0..self.kinds.len()).filter(move |&place| self.kinds[place] == kind && !self.left_out.contains(&place))
    }

    /// True when `place` or a place below it is of `kind`.
    pub fn has_below(&self, place: usize, kind: PlaceKind) -> bool {
        self.kinds_below[place] & level_bit(kind) != 0
    }

    /// True when `inner` is `outer` or lies below it.
    pub fn is_within(&self, inner: usize, outer: usize) -> bool {
        let mut at = Some(inner);
        while let Some(place) = at {
            if place == outer {
                return true;
            }
            at = self.parent[place];
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A layout and the CPU range of each of its places, built the way the
    /// engine builds them (cores of node 0, node 0, ..., machine, groups).
    fn layout_with_cpus(
        cores_per_node: &[usize],
        groups: &[(PlaceKind, std::ops::Range<usize>)],
    ) -> (Layout, Vec<std::ops::Range<usize>>) {
        let mut layout = Layout::new(&cores_per_node.iter().map(|&n| vec![1; n]).collect::<Vec<_>>());
        let mut ranges = Vec::new();
        let mut next = 0;
        for &cores in cores_per_node {
            for core in 0..cores {
                ranges.push(next + core..next + core + 1);
            }
            ranges.push(next..next + cores);
            next += cores;
        }
        if cores_per_node.len() > 1 {
            ranges.push(0..next);
        }
        for (kind, range) in groups {
            let node = (0..layout.nodes()).find(|&n| {
                let r = &ranges[layout.node_place(n)];
                r.start <= range.start && range.end <= r.end
            });
            layout.add_group(*kind, node, range.len());
            ranges.push(range.clone());
        }
        (layout, ranges)
    }

    fn tree(cores_per_node: &[usize], groups: &[(PlaceKind, std::ops::Range<usize>)]) -> PlaceTree {
        let (layout, ranges) = layout_with_cpus(cores_per_node, groups);
        PlaceTree::new(&layout, |outer, inner| {
            ranges[outer].start <= ranges[inner].start && ranges[inner].end <= ranges[outer].end
        })
    }

    #[test]
    fn nodes_hold_their_cores_and_the_machine_holds_the_nodes() {
        let t = tree(&[2, 2], &[]);
        // places: cores 0 1, node 2, cores 3 4, node 5, machine 6
        assert_eq!(t.root(), 6);
        assert_eq!(t.children(6), &[2, 5]);
        assert_eq!(t.children(2), &[0, 1]);
        assert_eq!(t.children(5), &[3, 4]);
        assert!(t.children(0).is_empty());
        assert_eq!(t.parent(4), Some(5));
        assert!(t.is_within(4, 6) && !t.is_within(4, 2));
    }

    #[test]
    fn packages_go_between_the_machine_and_their_nodes_and_l3s_between_a_node_and_its_cores() {
        // two packages of two nodes of four cores; node 0 has two L3s
        let t = tree(
            &[4, 4, 4, 4],
            &[
                (PlaceKind::Package, 0..8),
                (PlaceKind::Package, 8..16),
                (PlaceKind::L3, 0..2),
                (PlaceKind::L3, 2..4),
            ],
        );
        // places: node n's cores 5n..5n+3, node n 5n+4, machine 20,
        // packages 21 22, L3s 23 24
        assert_eq!(t.children(t.root()), &[21, 22]);
        assert_eq!(t.children(21), &[4, 9], "nodes 0 and 1");
        assert_eq!(t.children(4), &[23, 24], "node 0 splits into its L3s");
        assert_eq!(t.children(24), &[2, 3]);
        assert_eq!(t.children(9), &[5, 6, 7, 8]);
        assert!(t.has_below(t.root(), PlaceKind::L3) && t.has_below(4, PlaceKind::L3));
        assert!(!t.has_below(9, PlaceKind::L3), "node 1 has no L3 of its own");
        assert!(t.has_below(9, PlaceKind::Core) && !t.has_below(9, PlaceKind::Package));
        assert_eq!(t.places_at(PlaceKind::Package).collect::<Vec<_>>(), vec![21, 22]);
        assert!(t.left_out().is_empty());
    }

    #[test]
    fn a_group_straddling_two_nodes_is_left_out() {
        let t = tree(&[2, 2], &[(PlaceKind::L3, 1..3)]);
        assert_eq!(t.left_out(), &[7]);
        assert_eq!(t.parent(7), None);
        assert_eq!(t.children(t.root()), &[2, 5]);
        assert!(!t.has_level(PlaceKind::L3));
    }

    #[test]
    fn a_layout_without_groups_nests_by_node() {
        for cores in [&[2, 2][..], &[1, 1], &[3]] {
            let with_ranges = tree(cores, &[]);
            let layout = Layout::new(&cores.iter().map(|&n| vec![1; n]).collect::<Vec<_>>());
            assert_eq!(PlaceTree::without_groups(&layout), with_ranges, "{cores:?}");
        }
    }

    #[test]
    fn a_node_of_one_core_holds_that_core() {
        let t = tree(&[1, 1], &[]);
        // places: core 0, node 1, core 2, node 3, machine 4
        assert_eq!(t.children(4), &[1, 3]);
        assert_eq!(t.children(1), &[0]);
        assert_eq!(t.parent(2), Some(3));
    }

    #[test]
    fn one_node_is_the_root() {
        let t = tree(&[3], &[]);
        assert_eq!(t.root(), 3);
        assert_eq!(t.kind(3), PlaceKind::Node);
        assert_eq!(t.children(3), &[0, 1, 2]);
        assert_eq!(t.cpus(3), 3);
    }
}
