//! The machine as pinlearn sees it.
//!
//! ```text
//!   hwloc (this machine | synthetic string | lstopo XML)
//!        │  Topology::detect / from_spec
//!        ▼
//!   Topology { nodes: [Node { cpus, cores: [CpuSet of PUs] }],
//!              groups: [Group { package | die | L3, cpus }] }
//!        │  map_onto(real cpus)   (--topology-map: synthetic PUs -> real CPUs)
//!        │  restrict(allowed)     (inherited affinity ∩ --cpus)
//!        ▼
//!   places for the engine: every core, every node, the whole allowed set,
//!   every package, die and L3 that is none of those
//! ```
//!
//! `CpuSet` is the one CPU-set type of the project; it parses and prints the
//! list syntax of taskset/numactl (`0-3,8`).

mod cpuset;
mod tree;

pub use cpuset::{CpuListError, CpuSet};
pub use tree::{
    Group, GroupLevel, MAX_NUMA_NODES, MAX_REMOTE_RATIO, MAX_SYNTHETIC_PUS, Node, Topology, TopologyError,
    synthetic_pus_at_most,
};
