//! From a topology to the places a policy chooses among.
//!
//! ```text
//!   Topology (restricted to the allowed CPUs)
//!      │ Places::new
//!      ▼
//!   Layout (pure, for the policy)  +  cpus[place] (CpuSet, for the actuator)
//!      place 0..k   the cores of node 0, then node 0 itself, then node 1 ...
//!      then         the whole allowed set (when there are 2+ nodes)
//!      then         every package, die and L3 whose CPUs are no place above
//! ```

use pinlearn_policy::{Layout, PlaceKind, PlaceTree};
use pinlearn_topology::{CpuSet, GroupLevel, Topology};

/// The layout a policy sees and the CPU set of each of its places.
#[derive(Clone, Debug)]
pub struct Places {
    pub layout: Layout,
    pub cpus: Vec<CpuSet>,
    /// The machine's [`Topology::remote_ratio`] (NUMA distances), if known.
    pub remote_ratio: Option<f64>,
    /// How long the kernel takes to move a thread's memory to the node it
    /// works on (automatic NUMA balancing), where it does: `None` where it
    /// does not or cannot (one node, nodes that are only groups of CPUs).
    /// Filled by whoever knows the machine (the live session, the
    /// simulator); [`Places::new`] says `None`.
    pub kernel_moves_memory: Option<std::time::Duration>,
    /// pinlearn moves a thread's first-touched pages to the node it places
    /// the thread on (`move_thread_memory`, real memory nodes; the
    /// simulator models it). [`Places::new`] says no.
    pub memory_moves_with_threads: bool,
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
        let mut layout = layout;
        for group in topology.groups() {
            if cpus.contains(&group.cpus) {
                continue;
            }
            let kind = match group.level {
                GroupLevel::Package => PlaceKind::Package,
                GroupLevel::Die => PlaceKind::Die,
                GroupLevel::L3 => PlaceKind::L3,
            };
            let node = topology
                .nodes()
                .iter()
                .position(|node| group.cpus.is_subset(&node.cpus));
            layout.add_group(kind, node, group.cpus.len());
            cpus.push(group.cpus.clone());
        }
        debug_assert_eq!(cpus.len(), layout.places().len());
        Places {
            layout,
            cpus,
            remote_ratio: topology.remote_ratio(),
            kernel_moves_memory: None,
            memory_moves_with_threads: false,
        }
    }

    /// The places of `topology` on the machine pinlearn runs on, with how
    /// its kernel moves memory: where the nodes are real memory nodes (an
    /// hwloc topology with 2+ nodes) and `kernel.numa_balancing` is on, it
    /// brings a thread's memory after it in about
    /// [`crate::config::DEFAULT_MEMORY_FOLLOWS`].
    pub fn on_this_machine(topology: &Topology) -> Self {
        let mut places = Places::new(topology);
        if topology.nodes().len() > 1 && topology.source().starts_with("hwloc") && kernel_balances_numa() {
            places.kernel_moves_memory = Some(crate::config::DEFAULT_MEMORY_FOLLOWS);
        }
        places
    }

    /// The places as a tree (each under the smallest place holding it).
    pub fn tree(&self) -> PlaceTree {
        PlaceTree::new(&self.layout, |outer, inner| {
            self.cpus[inner].is_subset(&self.cpus[outer])
        })
    }

    /// The CPUs of the places of every level of the tree, outermost first,
    /// for topology queries: the machine is always one place (a tree of
    /// one node has that node at its root).
    pub fn levels(&self) -> Vec<(PlaceKind, Vec<CpuSet>)> {
        let tree = self.tree();
        PlaceKind::LEVELS
            .iter()
            .filter_map(|&(kind, _)| {
                let cpus: Vec<CpuSet> = match kind {
                    PlaceKind::Machine if !tree.has_level(kind) => vec![self.cpus[tree.root()].clone()],
                    _ => tree.places_at(kind).map(|p| self.cpus[p].clone()).collect(),
                };
                (!cpus.is_empty()).then_some((kind, cpus))
            })
            .collect()
    }

    /// The levels a bubble may open at (burst levels): those of the tree.
    pub fn burst_levels(&self) -> Vec<PlaceKind> {
        let tree = self.tree();
        PlaceKind::LEVELS
            .iter()
            .map(|&(kind, _)| kind)
            .filter(|&kind| tree.has_level(kind))
            .collect()
    }

    /// For every CPU number up to the highest of the places, the first core
    /// place holding it (`None`: no core place does).
    pub fn core_of_cpu(&self) -> Vec<Option<usize>> {
        let mut core_of = Vec::new();
        for place in self.layout.all_cores() {
            for cpu in self.cpus[place].iter() {
                if core_of.len() <= cpu {
                    core_of.resize(cpu + 1, None);
                }
                core_of[cpu].get_or_insert(place);
            }
        }
        core_of
    }

    /// The place index whose CPU set is exactly `set`, if any.
    pub fn find(&self, set: &CpuSet) -> Option<usize> {
        self.cpus.iter().position(|c| c == set)
    }
}

/// `kernel.numa_balancing` has its normal mode on (bit 0; bit 1 alone is
/// memory tiering, which moves pages between tiers, not after threads).
/// Unreadable: off.
fn kernel_balances_numa() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/numa_balancing").is_ok_and(|text| numa_balancing_moves_pages(&text))
}

/// Whether a `kernel.numa_balancing` value moves pages after threads.
fn numa_balancing_moves_pages(text: &str) -> bool {
    text.trim().parse::<u32>().is_ok_and(|mode| mode & 1 == 1)
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

    #[test]
    fn packages_and_l3_caches_become_places_after_the_rest() {
        let topo = Topology::from_synthetic("package:2 l3cache:2 core:2 pu:2").expect("synthetic");
        let places = Places::new(&topo);
        let flat = Places::new(&Topology::from_synthetic("node:1 core:8 pu:2").expect("synthetic"));
        // Cores and the one node keep the indices they have without groups.
        assert_eq!(places.cpus[..flat.cpus.len()], flat.cpus[..]);
        let packages: Vec<String> = places
            .layout
            .groups(PlaceKind::Package)
            .map(|p| places.cpus[p].to_string())
            .collect();
        assert_eq!(packages, ["0-7", "8-15"]);
        let l3: Vec<String> = places
            .layout
            .groups(PlaceKind::L3)
            .map(|p| places.cpus[p].to_string())
            .collect();
        assert_eq!(l3, ["0-3", "4-7", "8-11", "12-15"]);
        assert!(
            places
                .layout
                .groups(PlaceKind::L3)
                .all(|p| places.layout.places()[p].node == Some(0))
        );
        assert_eq!(places.layout.places().len(), 8 + 1 + 2 + 4);
    }

    #[test]
    fn groups_equal_to_a_node_add_no_place() {
        // Each die is a node with one L3: nothing to add but the packages.
        let topo = Topology::from_synthetic("package:2 die:2 l3cache:1 numa:1 core:2 pu:1").expect("synthetic");
        let places = Places::new(&topo);
        let kinds: Vec<PlaceKind> = places.layout.places().iter().map(|p| p.kind).collect();
        assert_eq!(kinds.iter().filter(|k| k.is_group()).count(), 2);
        assert_eq!(places.layout.groups(PlaceKind::Package).count(), 2);
        let first_package = places.layout.groups(PlaceKind::Package).next().unwrap();
        assert_eq!(places.layout.places()[first_package].node, None);
        assert_eq!(places.cpus[first_package].to_string(), "0-3");
    }

    #[test]
    fn only_numa_balancing_s_normal_mode_moves_pages_after_threads() {
        for (text, moves) in [
            ("1\n", true),
            ("3", true),
            ("0\n", false),
            ("2", false),
            ("", false),
            ("on", false),
        ] {
            assert_eq!(numa_balancing_moves_pages(text), moves, "{text:?}");
        }
        // A synthetic topology is no machine to ask: memory stays.
        let topology = Topology::from_synthetic("node:2 core:2 pu:1").expect("synthetic");
        assert_eq!(Places::on_this_machine(&topology).kernel_moves_memory, None);
    }
}
