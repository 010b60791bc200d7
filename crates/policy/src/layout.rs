//! The places a policy chooses among, without any CPU numbers.
//!
//! The engine builds a `Layout` from the topology (and keeps the CPU set of
//! each place beside it); policies only see place indices, the node each place
//! belongs to, and how many CPUs it spans.

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
}

/// One place of the layout.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlaceSpec {
    pub kind: PlaceKind,
    /// The node this place lies in; `None` for the `Machine` place.
    pub node: Option<usize>,
    /// Number of CPUs (PUs) the place spans.
    pub cpus: usize,
}

/// All places, grouped by node. Invariants (checked by [`Layout::new`]):
/// every node has at least one core place and exactly one `Node` place; a
/// `Machine` place exists iff there are two or more nodes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    places: Vec<PlaceSpec>,
    nodes: usize,
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
        if cores_per_node.len() > 1 {
            let cpus = cores_per_node.iter().flatten().sum();
            places.push(PlaceSpec {
                kind: PlaceKind::Machine,
                node: None,
                cpus,
            });
        }
        Layout {
            places,
            nodes: cores_per_node.len(),
        }
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
        if self.nodes > 1 {
            self.places.len() - 1
        } else {
            self.node_place(0)
        }
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
}
