//! From a topology to the places a policy chooses among.
//!
//! ```text
//!   Topology (restricted to the allowed CPUs)
//!      │ Places::new
//!      ▼
//!   Layout (pure, for the policy)  +  cpus[place] (CpuSet, for the actuator)
//!      place 0..k   the cores of node 0, then node 0 itself, then node 1 ...
//!      last         the whole allowed set (when there are 2+ nodes)
//! ```

use pinlearn_policy::Layout;
use pinlearn_topology::{CpuSet, Topology};

/// The layout a policy sees and the CPU set of each of its places.
#[derive(Clone, Debug)]
pub struct Places {
    pub layout: Layout,
    pub cpus: Vec<CpuSet>,
}

impl Places {
    pub fn new(topology: &Topology) -> Self {
        let cores_per_node: Vec<Vec<usize>> = topology
            .nodes()
            .iter()
            .map(|n| n.cores.iter().map(CpuSet::len).collect())
            .collect();
        let layout = Layout::new(&cores_per_node);
        let mut cpus = Vec::with_capacity(layout.places().len());
        for node in topology.nodes() {
            cpus.extend(node.cores.iter().cloned());
            cpus.push(node.cpus.clone());
        }
        if topology.nodes().len() > 1 {
            cpus.push(topology.cpus());
        }
        debug_assert_eq!(cpus.len(), layout.places().len());
        Places { layout, cpus }
    }

    /// The place index whose CPU set is exactly `set`, if any.
    pub fn find(&self, set: &CpuSet) -> Option<usize> {
        self.cpus.iter().position(|c| c == set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pinlearn_policy::PlaceKind;

    #[test]
    fn two_node_synthetic_topology_gives_cores_nodes_and_machine() {
        let topo = Topology::from_synthetic("node:2 core:3 pu:1").expect("synthetic");
        let places = Places::new(&topo);
        let kinds: Vec<PlaceKind> = places.layout.places().iter().map(|p| p.kind).collect();
        assert_eq!(kinds.iter().filter(|k| **k == PlaceKind::Core).count(), 6);
        assert_eq!(kinds.iter().filter(|k| **k == PlaceKind::Node).count(), 2);
        assert_eq!(kinds.last(), Some(&PlaceKind::Machine));
        assert_eq!(places.cpus[places.layout.node_place(1)].to_string(), "3-5");
        assert_eq!(places.cpus[places.layout.whole()].to_string(), "0-5");
        assert_eq!(places.find(&CpuSet::parse_list("4").unwrap()), Some(5));
    }
}
