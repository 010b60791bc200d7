//! The places a policy chooses among, without any CPU numbers.
//!
//! The engine builds a `Layout` from the topology (and keeps the CPU set of
//! each place beside it); policies only see place indices, the node each place
//! belongs to, and how many CPUs it spans.
//!
//! ```text
//!   index:  cores of node 0, node 0, cores of node 1, node 1, ..., machine (2+ nodes)
//!           then packages, dies, L3 caches (only those that are none of the above)
//! ```
//!
//! The groups come last so that the index of every core and node place (what
//! the learners' probability vectors are indexed by) does not depend on them.

use serde::{Deserialize, Serialize};

/// What a place is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PlaceKind {
    /// One core (all of its hardware threads).
    Core,
    /// A whole NUMA node: the OS balances inside it.
    Node,
    /// Every allowed CPU of every node (only present when there are 2+ nodes).
    Machine,
    /// A socket: the OS balances inside it.
    Package,
    /// A chiplet inside a package: the OS balances inside it.
    Die,
    /// The CPUs sharing one last-level (L3) cache: the OS balances inside it.
    L3,
}

impl PlaceKind {
    /// Every kind, from the outermost level in, with the word that names
    /// its level (bubbles' burst levels, topology queries).
    pub const LEVELS: [(PlaceKind, &'static str); 6] = [
        (PlaceKind::Machine, "machine"),
        (PlaceKind::Package, "package"),
        (PlaceKind::Die, "die"),
        (PlaceKind::L3, "l3"),
        (PlaceKind::Node, "node"),
        (PlaceKind::Core, "core"),
    ];

    /// The word naming this kind's level: `machine`, `package`, `die`,
    /// `l3`, `node` or `core`.
    pub fn level_name(self) -> &'static str {
        Self::LEVELS
            .iter()
            .find(|(kind, _)| *kind == self)
            .map(|(_, name)| *name)
            .expect("every kind has a level name")
    }

    /// The kind whose level is called `name` (case-insensitive; `L3` and
    /// `l3cache` are accepted for the L3 level).
    pub fn from_level_name(name: &str) -> Option<PlaceKind> {
        let name = name.trim().to_ascii_lowercase();
        let name = if name == "l3cache" { "l3" } else { name.as_str() };
        Self::LEVELS
            .iter()
            .find(|(_, word)| *word == name)
            .map(|(kind, _)| *kind)
    }

    /// True for the packages, dies and L3 caches added by [`Layout::add_group`].
    pub fn is_group(self) -> bool {
        matches!(self, PlaceKind::Package | PlaceKind::Die | PlaceKind::L3)
    }
}

/// One place of the layout.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlaceSpec {
    pub kind: PlaceKind,
    /// The node this place lies in; `None` for the `Machine` place and for a
    /// group spanning several nodes.
    pub node: Option<usize>,
    /// Number of CPUs (PUs) the place spans.
    pub cpus: usize,
}

/// All places, grouped by node. Invariants (checked by [`Layout::new`] and
/// [`Layout::add_group`]): every node has at least one core place and
/// exactly one `Node` place; a `Machine` place exists iff there are two or
/// more nodes; group places come after all of those.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    places: Vec<PlaceSpec>,
    nodes: usize,
    whole: usize,
}

impl Layout {
    /// Builds a layout from `cores_per_node[n]` = the CPU count of each core of
    /// node `n`. Places are numbered node by node: the cores of the node, then
    /// the node itself; the machine place (2+ nodes) comes last.
    ///
    /// # Panics
    /// If there is no node, or a node has no core, or a core has no CPU.
    pub fn new(cores_per_node: &[Vec<usize>]) -> Self {
        assert!(!cores_per_node.is_empty(), "a layout needs a node");
        let mut places = Vec::new();
        for (node, cores) in cores_per_node.iter().enumerate() {
            assert!(!cores.is_empty(), "node {node} has no core");
            for &cpus in cores {
                assert!(cpus > 0, "a core without CPUs");
                places.push(PlaceSpec {
                    kind: PlaceKind::Core,
                    node: Some(node),
                    cpus,
                });
            }
            places.push(PlaceSpec {
                kind: PlaceKind::Node,
                node: Some(node),
                cpus: cores.iter().sum(),
            });
        }
        let whole = if cores_per_node.len() > 1 {
            let cpus = cores_per_node.iter().flatten().sum();
            places.push(PlaceSpec {
                kind: PlaceKind::Machine,
                node: None,
                cpus,
            });
            places.len() - 1
        } else {
            places.len() - 1 // the only node's place
        };
        Layout {
            places,
            nodes: cores_per_node.len(),
            whole,
        }
    }

    /// Appends a package, die or L3 place spanning `cpus` CPUs, lying in
    /// `node` (or across nodes: `None`), and returns its index.
    ///
    /// # Panics
    /// If `kind` is not a group kind, `node` is not a node of the layout, or
    /// `cpus` is zero.
    pub fn add_group(&mut self, kind: PlaceKind, node: Option<usize>, cpus: usize) -> usize {
        assert!(kind.is_group(), "{kind:?} is not a group place");
        assert!(node.is_none_or(|node| node < self.nodes), "no node {node:?}");
        assert!(cpus > 0, "a group without CPUs");
        self.places.push(PlaceSpec { kind, node, cpus });
        self.places.len() - 1
    }

    /// The group places of `kind` (package, die or L3), in order.
    pub fn groups(&self, kind: PlaceKind) -> impl Iterator<Item = usize> + '_ {
        self.places
            .iter()
            .enumerate()
            .filter(move |(_, p)| p.kind == kind)
            .map(|(i, _)| i)
    }

    /// A uniform layout: `nodes` nodes of `cores` single-PU cores each.
    pub fn uniform(nodes: usize, cores: usize) -> Self {
        Self::new(&vec![vec![1; cores]; nodes])
    }

    pub fn places(&self) -> &[PlaceSpec] {
        &self.places
    }

    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// Whether `place` is a core place (`false` for one out of range).
    pub fn is_core(&self, place: usize) -> bool {
        self.places.get(place).is_some_and(|p| p.kind == PlaceKind::Core)
    }

    /// Core places of `node`, in order.
    pub fn cores_of(&self, node: usize) -> impl Iterator<Item = usize> + '_ {
        self.places
            .iter()
            .enumerate()
            .filter(move |(_, p)| p.kind == PlaceKind::Core && p.node == Some(node))
            .map(|(i, _)| i)
    }

    /// Every core place, node by node.
    pub fn all_cores(&self) -> impl Iterator<Item = usize> + '_ {
        self.places
            .iter()
            .enumerate()
            .filter(|(_, p)| p.kind == PlaceKind::Core)
            .map(|(i, _)| i)
    }

    /// Every core place in round-robin order: one core of each node in
    /// turn (the first core of every node, then the second, ...), so that
    /// threads placed in this order split over the nodes as evenly as they
    /// can (a node with fewer cores drops out once they are used up).
    pub fn round_robin_cores(&self) -> Vec<usize> {
        let per_node: Vec<Vec<usize>> = (0..self.nodes).map(|node| self.cores_of(node).collect()).collect();
        let longest = per_node.iter().map(Vec::len).max().unwrap_or(0);
        (0..longest)
            .flat_map(|rank| per_node.iter().filter_map(move |cores| cores.get(rank).copied()))
            .collect()
    }

    /// The `Node` place of `node`.
    pub fn node_place(&self, node: usize) -> usize {
        self.places
            .iter()
            .position(|p| p.kind == PlaceKind::Node && p.node == Some(node))
            .expect("every node has a node place")
    }

    /// The place spanning every allowed CPU: the machine place, or the only
    /// node's place on a one-node machine. The OS policy uses it.
    pub fn whole(&self) -> usize {
        self.whole
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_node_has_no_machine_place() {
        let l = Layout::uniform(1, 2);
        assert_eq!(l.places().len(), 3);
        assert_eq!(l.whole(), 2);
        assert_eq!(l.cores_of(0).collect::<Vec<_>>(), vec![0, 1]);
    }

    #[test]
    fn two_nodes_number_node_by_node() {
        let l = Layout::new(&[vec![2, 2], vec![2]]);
        assert_eq!(l.places().len(), 2 + 1 + 1 + 1 + 1);
        assert_eq!(l.node_place(0), 2);
        assert_eq!(l.cores_of(1).collect::<Vec<_>>(), vec![3]);
        assert_eq!(l.node_place(1), 4);
        assert_eq!(l.whole(), 5);
        assert_eq!(l.places()[5].cpus, 6);
    }

    #[test]
    fn round_robin_takes_one_core_of_each_node_in_turn() {
        // Nodes of 3, 1 and 2 cores: places 0-2, 4, 6-7 (node places 3, 5, 8).
        let l = Layout::new(&[vec![1, 1, 1], vec![1], vec![1, 1]]);
        assert_eq!(l.round_robin_cores(), vec![0, 4, 6, 1, 7, 2]);
        let mut sorted = l.round_robin_cores();
        sorted.sort_unstable();
        assert_eq!(sorted, l.all_cores().collect::<Vec<_>>(), "every core once");
        // One node: the cores in order.
        assert_eq!(Layout::uniform(1, 3).round_robin_cores(), vec![0, 1, 2]);
    }

    #[test]
    fn groups_come_after_every_core_node_and_machine_place() {
        let mut l = Layout::new(&[vec![1, 1], vec![1, 1]]);
        let before = l.clone();
        let package = l.add_group(PlaceKind::Package, None, 4);
        let l3 = l.add_group(PlaceKind::L3, Some(1), 2);
        assert_eq!((package, l3), (7, 8));
        assert_eq!(l.places()[..7], before.places()[..]);
        assert_eq!(l.whole(), before.whole());
        assert_eq!(l.places()[l.whole()].kind, PlaceKind::Machine);
        assert_eq!(l.groups(PlaceKind::L3).collect::<Vec<_>>(), vec![8]);
        assert_eq!(l.all_cores().count(), 4);
    }

    #[test]
    #[should_panic(expected = "not a group place")]
    fn add_group_refuses_a_core() {
        Layout::uniform(1, 2).add_group(PlaceKind::Core, Some(0), 1);
    }
}
