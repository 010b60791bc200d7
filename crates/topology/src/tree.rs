//! `Topology`: the machine as NUMA nodes of cores of PUs, with the packages,
//! dies and L3 caches that group them, read through hwloc.
//!
//! hwloc describes a machine as a tree (machine, packages, dies, L3 caches,
//! cores, PUs) with NUMA nodes hanging off it as memory children. pinlearn
//! needs the places a thread can be pinned to and what the CPUs of a place
//! share, so this module turns that tree into plain data and drops hwloc
//! right after reading it:
//!
//! ```text
//!   hwloc source ──► hwlocality::Topology ──► PUs (OS indices)
//!   (this machine,                            NUMA nodes' CPUs ─► each PU goes to the
//!    synthetic,                                                   smallest node holding it
//!    XML file)                                Cores' PUs ────────► split per node
//!                                             Packages, dies, L3s ► groups (CPU sets)
//!                                                   │
//!                                                   ▼  from_nodes + with_groups (validate, sort)
//!          Topology { nodes: [Node { os_index, cpus, cores }], groups: [Group], source }
//!                                                   │
//!                         map_onto(real) / restrict(allowed) ─► a new, validated Topology
//!                                                   │
//!                         describe(): the tree, each set nested in the smallest set holding it
//! ```
//!
//! Memory-only NUMA nodes (and nodes whose CPUs all belong to a closer node,
//! such as high-bandwidth memory attached next to DDR) get no CPU and are
//! left out. PUs that no hwloc Core covers become one-PU cores. CPU numbers
//! are OS indices: what `sched_setaffinity` takes.

use crate::cpuset::CpuSet;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::distance::DistancesKind;
use hwlocality::object::types::ObjectType;
use hwlocality::topology::builder::{FileInputError, StringInputError, TopologyBuilder};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;
use thiserror::Error;

/// Example given in error messages when a topology description is wrong.
const SPEC_HINT: &str =
    "give an hwloc synthetic string such as \"node:2 core:4 pu:1\" or an XML file from `lstopo --of xml`";

/// The most PUs a synthetic description may have: more than any machine
/// pinlearn will meet, few enough that hwloc builds it in a moment.
pub const MAX_SYNTHETIC_PUS: u64 = 1 << 14;

/// The most NUMA nodes, and groups (packages, dies, L3 caches), a topology
/// may have: half of Linux's own limit on NUMA nodes (`MAX_NUMNODES` with
/// `NODES_SHIFT` 10, 1024). hwloc's object insertion is quadratic in nodes:
/// afl found 4444 nodes taking it 6 s per read and 882 nodes (`882 18`)
/// 5.5 s; 512 take it under 2 s.
pub const MAX_NUMA_NODES: usize = 512;

/// Width at which `describe` wraps the list of cores.
const DESCRIBE_WIDTH: usize = 100;

/// Why a topology could not be read, built or transformed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TopologyError {
    #[error(
        "hwloc could not read this machine's topology ({reason}); check that /sys is mounted, or give a topology with a synthetic string or an lstopo XML file"
    )]
    Detect { reason: String },
    #[error("invalid synthetic topology {spec:?}: {reason}; {SPEC_HINT}")]
    InvalidSynthetic { spec: String, reason: String },
    #[error(
        "cannot load topology XML file {path}: {reason}; write one with `lstopo --of xml FILE` or give a synthetic string such as \"node:2 core:4 pu:1\""
    )]
    InvalidXml { path: String, reason: String },
    #[error("topology file {spec:?} does not exist; {SPEC_HINT}")]
    MissingFile { spec: String },
    #[error("the topology from {source_name} has no CPUs; {SPEC_HINT}")]
    NoCpus { source_name: String },
    #[error("the topology from {source_name} has {count} {what}; pinlearn handles at most {MAX_NUMA_NODES}")]
    TooManyObjects {
        source_name: String,
        count: usize,
        what: &'static str,
    },
    #[error("a topology needs at least one node with CPUs")]
    NoNodes,
    #[error(
        "topology {spec:?} is synthetic: give the topology map, the real CPUs its {pus} PUs stand for (a list such as 0-{last})"
    )]
    NeedsMap { spec: String, pus: usize, last: usize },
    #[error("node {node} appears twice; every NUMA node index must be unique")]
    DuplicateNode { node: u32 },
    #[error("node {node} has no cores; every node needs at least one core")]
    NodeWithoutCores { node: u32 },
    #[error("node {node} has an empty core; every core needs at least one CPU")]
    EmptyCore { node: u32 },
    #[error("CPU {cpu} is in two cores; every CPU must belong to exactly one core")]
    CpuInTwoCores { cpu: usize },
    #[error(
        "node {node} lists CPUs {listed} but its cores hold {in_cores}; a node's CPUs must be the union of its cores"
    )]
    NodeCpusMismatch {
        node: u32,
        listed: CpuSet,
        in_cores: CpuSet,
    },
    #[error(
        "the topology has {topology_count} CPUs ({topology_cpus}) but the real CPU set {real_cpus} has {real_count}; mapping a topology onto real CPUs needs the same number on both sides"
    )]
    CountMismatch {
        topology_count: usize,
        topology_cpus: CpuSet,
        real_count: usize,
        real_cpus: CpuSet,
    },
    #[error("none of the CPUs {allowed} is in this topology ({cpus})")]
    NothingAllowed { allowed: CpuSet, cpus: CpuSet },
    #[error("{level} {index} has no CPUs; every group needs at least one CPU")]
    EmptyGroup { level: GroupLevel, index: u32 },
    #[error("{level} {index} holds CPUs {outside} that no node holds; a group's CPUs must be in the topology")]
    GroupOutsideTopology {
        level: GroupLevel,
        index: u32,
        outside: CpuSet,
    },
    #[error("CPU {cpu} is in two {level} groups; the groups of one level must not overlap")]
    GroupsOverlap { level: GroupLevel, cpu: usize },
}

/// A level of the hardware above the core whose CPUs share something a
/// thread feels: a socket (package), a chiplet (die), a last-level cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupLevel {
    Package,
    Die,
    L3,
}

impl GroupLevel {
    /// Every level, from the outermost in.
    pub const ALL: [GroupLevel; 3] = [GroupLevel::Package, GroupLevel::Die, GroupLevel::L3];

    /// The word used in text: `package`, `die`, `L3`.
    pub fn name(self) -> &'static str {
        match self {
            GroupLevel::Package => "package",
            GroupLevel::Die => "die",
            GroupLevel::L3 => "L3",
        }
    }

    fn hwloc_type(self) -> ObjectType {
        match self {
            GroupLevel::Package => ObjectType::Package,
            GroupLevel::Die => ObjectType::Die,
            GroupLevel::L3 => ObjectType::L3Cache,
        }
    }
}

impl std::fmt::Display for GroupLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One package, die or L3 cache and the CPUs under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Group {
    pub level: GroupLevel,
    /// hwloc's logical index among the groups of this level (`L#`).
    pub index: u32,
    pub cpus: CpuSet,
}

/// A NUMA node and the CPUs it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Node {
    /// The node's OS index (what `numactl -N` and `mbind` take).
    pub os_index: u32,
    /// Every CPU of the node: the union of `cores`.
    pub cpus: CpuSet,
    /// The PUs (hardware threads) of each core, sorted by their first CPU.
    pub cores: Vec<CpuSet>,
}

/// The machine's places: NUMA nodes of cores of CPUs.
///
/// Invariants (checked by [`Topology::from_nodes`] and
/// [`Topology::with_groups`]): at least one node; nodes sorted by
/// `os_index`, unique; every node has at least one core; every core has at
/// least one CPU and no CPU is in two cores; a node's `cpus` is the union of
/// its cores; every group has CPUs, all in the topology, and the groups of
/// one level are disjoint, sorted by (level, first CPU).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Topology {
    nodes: Vec<Node>,
    groups: Vec<Group>,
    source: String,
    /// [`Topology::remote_ratio`] in hundredths (kept whole so that a
    /// topology stays `Eq`); written as the ratio.
    #[serde(rename = "remote_ratio", serialize_with = "centi_as_ratio")]
    remote_ratio_centi: Option<u32>,
}

impl Topology {
    /// This machine, as hwloc sees it (only the CPUs this process may use),
    /// read without changing the calling thread's CPU mask
    /// ([`this_machine`]).
    pub fn detect() -> Result<Self, TopologyError> {
        let _hwloc = HWLOC.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let hwloc = this_machine().map_err(|reason| TopologyError::Detect { reason })?;
        Self::from_hwloc(&hwloc, "hwloc: this machine".to_string())
    }

    /// The bytes of this machine's last-level caches that serve the CPUs
    /// this process may use: the sizes of the caches of the deepest level
    /// hwloc finds (L5 down to L1, data or unified), summed; `None` when
    /// hwloc knows no cache size (some virtual machines and containers).
    /// For sizing data that must not fit in the caches (`pinlearn work
    /// stream`), read as [`Topology::detect`] reads the machine.
    pub fn detect_last_level_cache_bytes() -> Option<u64> {
        let _hwloc = HWLOC.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let hwloc = this_machine().ok()?;
        let sizes = |ty: ObjectType| -> Option<u64> {
            let total: u64 = hwloc
                .objects_with_type(ty)
                .filter_map(|cache| match cache.attributes() {
                    Some(ObjectAttributes::Cache(attributes)) => attributes.size().map(|size| size.get()),
                    _ => None,
                })
                .sum();
            (total > 0).then_some(total)
        };
        [
            ObjectType::L5Cache,
            ObjectType::L4Cache,
            ObjectType::L3Cache,
            ObjectType::L2Cache,
            ObjectType::L1Cache,
        ]
        .into_iter()
        .find_map(sizes)
    }

    /// An hwloc synthetic description such as `"node:2 core:14 pu:1"`; CPU
    /// numbers are the synthetic PUs' OS indices (0..n-1 by default).
    pub fn from_synthetic(spec: &str) -> Result<Self, TopologyError> {
        let spec = spec.trim();
        let invalid = |reason: &str| TopologyError::InvalidSynthetic {
            spec: spec.to_string(),
            reason: reason.to_string(),
        };
        // hwloc builds every object it is asked for: refuse absurd sizes first.
        if synthetic_pus_at_most(spec) > MAX_SYNTHETIC_PUS {
            return Err(invalid(&format!("it describes more than {MAX_SYNTHETIC_PUS} PUs")));
        }
        let _hwloc = HWLOC.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        survives_in_a_child(|| {
            TopologyBuilder::new()
                .from_synthetic(spec)
                .ok()
                .and_then(|builder| builder.build().ok())
                .is_none_or(|topology| within_limits(&topology))
        })
        .map_err(|why| invalid(&why))?;
        let builder = TopologyBuilder::new()
            .from_synthetic(spec)
            .map_err(|error| match error {
                StringInputError::ContainsNul => invalid("it contains a NUL character"),
                StringInputError::Invalid => invalid(
                    "hwloc rejected it (levels go from the top down as TYPE:COUNT with COUNT at least 1, and the last level is pu:COUNT)",
                ),
            })?;
        let hwloc = builder
            .build()
            .map_err(|error| invalid(&format!("hwloc could not build it ({error})")))?;
        Self::from_hwloc(&hwloc, format!("synthetic: {spec}")).map_err(|error| match error {
            named @ (TopologyError::NoCpus { .. } | TopologyError::TooManyObjects { .. }) => named,
            unnamed => invalid(&unnamed.to_string()),
        })
    }

    /// An XML file written by `lstopo --of xml` or hwloc's XML export.
    pub fn from_xml(path: &Path) -> Result<Self, TopologyError> {
        let invalid = |reason: String| TopologyError::InvalidXml {
            path: path.display().to_string(),
            reason,
        };
        if !path.is_file() {
            return Err(invalid("it does not exist or is not a file".to_string()));
        }
        let _hwloc = HWLOC.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        survives_in_a_child(|| {
            TopologyBuilder::new()
                .from_xml_file(path)
                .ok()
                .and_then(|builder| builder.build().ok())
                .is_none_or(|topology| within_limits(&topology))
        })
        .map_err(invalid)?;
        let builder = TopologyBuilder::new()
            .from_xml_file(path)
            .map_err(|error| match error {
                FileInputError::BadRustPath(reason) => invalid(reason.to_string()),
                FileInputError::Invalid(_) => {
                    invalid("hwloc could not read it as a topology (not an hwloc XML file?)".to_string())
                }
            })?;
        let hwloc = builder
            .build()
            .map_err(|error| invalid(format!("hwloc could not build it ({error})")))?;
        Self::from_hwloc(&hwloc, format!("xml: {}", path.display())).map_err(|error| match error {
            named @ (TopologyError::NoCpus { .. } | TopologyError::TooManyObjects { .. }) => named,
            unnamed => invalid(unnamed.to_string()),
        })
    }

    /// An existing file is read as XML; anything else as a synthetic string.
    /// A missing file that looks like a path (contains `/` or ends in `.xml`)
    /// is reported as missing rather than as a bad synthetic string.
    /// [`Self::from_spec`], then a synthetic topology mapped onto the real
    /// CPUs `map` ([`Self::map_onto`]); an XML file needs no map.
    pub fn from_spec_onto(spec: &str, map: Option<&CpuSet>) -> Result<Self, TopologyError> {
        let topology = Self::from_spec(spec)?;
        match map {
            Some(map) => topology.map_onto(map),
            None if topology.source().starts_with("xml") => Ok(topology),
            None => {
                let pus = topology.cpus().len();
                Err(TopologyError::NeedsMap {
                    spec: spec.to_string(),
                    pus,
                    last: pus.saturating_sub(1),
                })
            }
        }
    }

    pub fn from_spec(spec: &str) -> Result<Self, TopologyError> {
        let path = Path::new(spec);
        if path.is_file() {
            return Self::from_xml(path);
        }
        let looks_like_a_path = spec.contains('/') || spec.to_ascii_lowercase().ends_with(".xml");
        if looks_like_a_path {
            return Err(TopologyError::MissingFile { spec: spec.to_string() });
        }
        Self::from_synthetic(spec)
    }

    /// Builds a topology from plain data, checking the invariants listed on
    /// [`Topology`] and sorting nodes by OS index and cores by first CPU.
    pub fn from_nodes(mut nodes: Vec<Node>, source: impl Into<String>) -> Result<Self, TopologyError> {
        if nodes.is_empty() {
            return Err(TopologyError::NoNodes);
        }
        nodes.sort_by_key(|node| node.os_index);
        if let Some(pair) = nodes.windows(2).find(|pair| pair[0].os_index == pair[1].os_index) {
            return Err(TopologyError::DuplicateNode { node: pair[0].os_index });
        }
        let mut seen_cpus = CpuSet::new();
        for node in &mut nodes {
            if node.cores.is_empty() {
                return Err(TopologyError::NodeWithoutCores { node: node.os_index });
            }
            node.cores.sort();
            let mut in_cores = CpuSet::new();
            for core in &node.cores {
                if core.is_empty() {
                    return Err(TopologyError::EmptyCore { node: node.os_index });
                }
                if let Some(cpu) = core.intersection(&seen_cpus).first() {
                    return Err(TopologyError::CpuInTwoCores { cpu });
                }
                seen_cpus = seen_cpus.union(core);
                in_cores = in_cores.union(core);
            }
            if in_cores != node.cpus {
                return Err(TopologyError::NodeCpusMismatch {
                    node: node.os_index,
                    listed: node.cpus.clone(),
                    in_cores,
                });
            }
        }
        Ok(Topology {
            nodes,
            groups: Vec::new(),
            source: source.into(),
            remote_ratio_centi: None,
        })
    }

    /// How many times farther another node's memory is than a node's own,
    /// by the machine's NUMA distances (hwloc's latency matrix of the NUMA
    /// nodes, on Linux the firmware's SLIT: 10 local, 21 remote gives 2.1):
    /// the mean over pairs of nodes of d(i, j) / d(i, i), at least 1 and at
    /// most [`MAX_REMOTE_RATIO`]. `None` when the source gives no distances
    /// (one node, a synthetic string, an XML file without them).
    pub fn remote_ratio(&self) -> Option<f64> {
        self.remote_ratio_centi.map(|centi| f64::from(centi) / 100.0)
    }

    /// The same topology with this [`Topology::remote_ratio`] (clamped to
    /// 1 ..= [`MAX_REMOTE_RATIO`]; `None`, NaN: none). A model of a machine
    /// (the simulator) says here how far its remote memory is.
    pub fn with_remote_ratio(mut self, ratio: Option<f64>) -> Self {
        self.remote_ratio_centi = ratio
            .filter(|r| !r.is_nan())
            .map(|r| (r.clamp(1.0, MAX_REMOTE_RATIO) * 100.0).round() as u32);
        self
    }

    /// The same topology with these packages, dies and L3 caches (replacing
    /// any it had), checked and sorted by (level, first CPU).
    pub fn with_groups(mut self, mut groups: Vec<Group>) -> Result<Self, TopologyError> {
        let all = self.cpus();
        for group in &groups {
            if group.cpus.is_empty() {
                return Err(TopologyError::EmptyGroup {
                    level: group.level,
                    index: group.index,
                });
            }
            let outside = group.cpus.difference(&all);
            if !outside.is_empty() {
                return Err(TopologyError::GroupOutsideTopology {
                    level: group.level,
                    index: group.index,
                    outside,
                });
            }
        }
        groups.sort_by_key(|group| (group.level, group.cpus.first(), group.index));
        for level in GroupLevel::ALL {
            let mut seen = CpuSet::new();
            for group in groups.iter().filter(|group| group.level == level) {
                if let Some(cpu) = group.cpus.intersection(&seen).first() {
                    return Err(TopologyError::GroupsOverlap { level, cpu });
                }
                seen = seen.union(&group.cpus);
            }
        }
        self.groups = groups;
        Ok(self)
    }

    /// Renumbers the CPUs: the i-th PU in (node, core, PU) order becomes the
    /// i-th CPU of `real` in ascending order (`--topology-map`). Node indices
    /// and the grouping into cores and nodes are kept.
    pub fn map_onto(&self, real: &CpuSet) -> Result<Topology, TopologyError> {
        let topology_cpus = self.cpus();
        if topology_cpus.len() != real.len() {
            return Err(TopologyError::CountMismatch {
                topology_count: topology_cpus.len(),
                topology_cpus,
                real_count: real.len(),
                real_cpus: real.clone(),
            });
        }
        let in_order = self.cores().flat_map(CpuSet::iter);
        let real_of: std::collections::HashMap<usize, usize> = in_order.zip(real.iter()).collect();
        let map = |set: &CpuSet| -> CpuSet { set.iter().map(|cpu| real_of[&cpu]).collect() };
        let mapped = self
            .nodes
            .iter()
            .map(|node| Node {
                os_index: node.os_index,
                cpus: map(&node.cpus),
                cores: node.cores.iter().map(map).collect(),
            })
            .collect();
        let groups = self
            .groups
            .iter()
            .map(|group| Group {
                cpus: map(&group.cpus),
                ..group.clone()
            })
            .collect();
        Ok(
            Topology::from_nodes(mapped, format!("{} mapped onto CPUs {real}", self.source))?
                .with_groups(groups)?
                .with_remote_ratio(self.remote_ratio()),
        )
    }

    /// Keeps only the CPUs in `allowed`, dropping cores and nodes left empty.
    pub fn restrict(&self, allowed: &CpuSet) -> Result<Topology, TopologyError> {
        let all_cpus = self.cpus();
        let kept_cpus = all_cpus.intersection(allowed);
        if kept_cpus.is_empty() {
            return Err(TopologyError::NothingAllowed {
                allowed: allowed.clone(),
                cpus: all_cpus,
            });
        }
        if kept_cpus == all_cpus {
            return Ok(self.clone());
        }
        let nodes = self
            .nodes
            .iter()
            .filter_map(|node| {
                let cores: Vec<CpuSet> = node
                    .cores
                    .iter()
                    .map(|core| core.intersection(allowed))
                    .filter(|core| !core.is_empty())
                    .collect();
                (!cores.is_empty()).then(|| Node {
                    os_index: node.os_index,
                    cpus: node.cpus.intersection(allowed),
                    cores,
                })
            })
            .collect();
        let groups = self
            .groups
            .iter()
            .map(|group| Group {
                cpus: group.cpus.intersection(allowed),
                ..group.clone()
            })
            .filter(|group| !group.cpus.is_empty())
            .collect();
        Ok(
            Topology::from_nodes(nodes, format!("{} restricted to CPUs {kept_cpus}", self.source))?
                .with_groups(groups)?
                .with_remote_ratio(self.remote_ratio()),
        )
    }

    /// The nodes, sorted by OS index.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The packages, dies and L3 caches, sorted by (level, first CPU).
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// The groups of one level.
    pub fn groups_at(&self, level: GroupLevel) -> impl Iterator<Item = &Group> {
        self.groups.iter().filter(move |group| group.level == level)
    }

    /// Every CPU of the topology.
    pub fn cpus(&self) -> CpuSet {
        self.nodes
            .iter()
            .fold(CpuSet::new(), |union, node| union.union(&node.cpus))
    }

    /// Every core, node by node.
    pub fn cores(&self) -> impl Iterator<Item = &CpuSet> {
        self.nodes.iter().flat_map(|node| node.cores.iter())
    }

    pub fn core_count(&self) -> usize {
        self.nodes.iter().map(|node| node.cores.len()).sum()
    }

    /// The node holding `cpu`, if any.
    pub fn node_of(&self, cpu: usize) -> Option<&Node> {
        self.nodes.iter().find(|node| node.cpus.contains(cpu))
    }

    /// The core (its PUs) holding `cpu`, if any.
    pub fn core_of(&self, cpu: usize) -> Option<&CpuSet> {
        self.cores().find(|core| core.contains(cpu))
    }

    /// Where the topology came from, e.g. `synthetic: node:2 core:14 pu:1`.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// A human-readable tree for `pinlearn topo`: the source, a line
    /// counting every level, then each package, die, node and L3 cache
    /// nested under the smallest one holding it (sets that are equal share
    /// a line, `package 0 / node 0`), with the cores that no deeper set
    /// holds listed as CPU lists on a wrapped line.
    pub fn describe(&self) -> String {
        let cpus = self.cpus();
        let mut counts: Vec<String> = GroupLevel::ALL
            .iter()
            .filter_map(|&level| {
                let count = self.groups_at(level).count();
                let noun = match level {
                    GroupLevel::L3 => "L3 cache",
                    _ => level.name(),
                };
                (count > 0).then(|| plural(count, noun))
            })
            .collect();
        counts.push(format!("{} with CPUs", plural(self.nodes.len(), "NUMA node")));
        counts.push(plural(self.core_count(), "core"));
        counts.push(format!("{} ({})", plural(cpus.len(), "CPU"), cpus));
        if let Some(ratio) = self.remote_ratio() {
            counts.push(format!("remote memory {ratio:.2}x as far as local (NUMA distances)"));
        }
        let mut text = format!("{}\n{}\n", self.source, counts.join(", "));

        let sets = self.nested_sets();
        // The cores holding each CPU, so that finding the cores of a set
        // looks at its own CPUs, not at every core of the machine.
        let all_cores: Vec<&CpuSet> = self.cores().collect();
        let mut cores_of_cpu: Vec<Vec<usize>> = vec![Vec::new(); cpus.last().map_or(0, |last| last + 1)];
        for (index, core) in all_cores.iter().enumerate() {
            for cpu in core.iter() {
                cores_of_cpu[cpu].push(index);
            }
        }
        let mut stack: Vec<(usize, usize)> = sets
            .iter()
            .enumerate()
            .filter(|(_, set)| set.parent.is_none())
            .map(|(index, _)| (index, 0))
            .rev()
            .collect();
        while let Some((index, depth)) = stack.pop() {
            let set = &sets[index];
            let indent = "  ".repeat(depth);
            let mut candidates: Vec<usize> = set
                .cpus
                .iter()
                .flat_map(|cpu| cores_of_cpu.get(cpu).into_iter().flatten().copied())
                .collect();
            candidates.sort_unstable();
            candidates.dedup();
            let cores: Vec<&CpuSet> = candidates
                .into_iter()
                .map(|index| all_cores[index])
                .filter(|core| core.is_subset(&set.cpus))
                .collect();
            let smallest = cores.iter().map(|core| core.len()).min().unwrap_or(0);
            let largest = cores.iter().map(|core| core.len()).max().unwrap_or(0);
            let per_core = if smallest == largest {
                plural(smallest, "CPU")
            } else {
                format!("{smallest}-{largest} CPUs")
            };
            let _ = writeln!(
                text,
                "{indent}{}: CPUs {}, {} of {}",
                set.labels.join(" / "),
                set.cpus,
                plural(cores.len(), "core"),
                per_core
            );
            let children: Vec<usize> = (0..sets.len())
                .filter(|&child| sets[child].parent == Some(index))
                .collect();
            let in_children = children
                .iter()
                .fold(CpuSet::new(), |union, &child| union.union(&sets[child].cpus));
            let own_cores: Vec<String> = cores
                .iter()
                .filter(|core| core.intersection(&in_children).is_empty())
                .map(|core| core.to_string())
                .collect();
            if !own_cores.is_empty() {
                let prefix = if children.is_empty() {
                    "cores: "
                } else {
                    "other cores: "
                };
                text.push_str(&wrap_words(&format!("{indent}  {prefix}"), &own_cores, DESCRIBE_WIDTH));
            }
            stack.extend(children.into_iter().rev().map(|child| (child, depth + 1)));
        }
        text
    }

    /// Every package, die, node and L3 as CPU sets, equal sets merged into
    /// one (labels from the outermost level in), each with the index of the
    /// smallest set strictly holding it. Sorted by first CPU, larger first.
    fn nested_sets(&self) -> Vec<NestedSet> {
        // Rank orders the labels of equal sets: package, die, node, L3.
        let rank = |level: GroupLevel| match level {
            GroupLevel::Package => 0,
            GroupLevel::Die => 1,
            GroupLevel::L3 => 3,
        };
        let mut labelled: Vec<(usize, String, CpuSet)> = self
            .groups
            .iter()
            .map(|group| {
                (
                    rank(group.level),
                    format!("{} {}", group.level, group.index),
                    group.cpus.clone(),
                )
            })
            .chain(
                self.nodes
                    .iter()
                    .map(|node| (2, format!("node {}", node.os_index), node.cpus.clone())),
            )
            .collect();
        labelled.sort_by(|a, b| {
            (a.2.first(), std::cmp::Reverse(a.2.len()), a.0).cmp(&(b.2.first(), std::cmp::Reverse(b.2.len()), b.0))
        });
        let mut sets: Vec<NestedSet> = Vec::new();
        for (_, label, cpus) in labelled {
            match sets.iter_mut().find(|set| set.cpus == cpus) {
                Some(set) => set.labels.push(label),
                None => sets.push(NestedSet {
                    labels: vec![label],
                    cpus,
                    parent: None,
                }),
            }
        }
        for index in 0..sets.len() {
            sets[index].parent = (0..sets.len())
                .filter(|&other| {
                    other != index
                        && sets[index].cpus.is_subset(&sets[other].cpus)
                        && sets[other].cpus != sets[index].cpus
                })
                .min_by_key(|&other| (sets[other].cpus.len(), other));
        }
        sets
    }

    /// Flattens an hwloc tree into nodes of cores (see the module docs).
    fn from_hwloc(hwloc: &hwlocality::Topology, source: String) -> Result<Self, TopologyError> {
        // PUs without an OS index cannot be pinned to, so they are skipped.
        let all_pus: CpuSet = hwloc
            .objects_with_type(ObjectType::PU)
            .filter_map(|pu| pu.os_index())
            .collect();
        if all_pus.is_empty() {
            return Err(TopologyError::NoCpus { source_name: source });
        }

        // Each PU belongs to the node with the smallest CPU set holding it
        // (ties: lowest OS index), which is the node hwloc and Linux call
        // local to it.
        let mut numa_nodes: Vec<(u32, CpuSet)> = hwloc
            .objects_with_type(ObjectType::NUMANode)
            .map(|node| {
                let index = node.os_index().unwrap_or(node.logical_index());
                (saturating_u32(index), hwloc_cpus(node, &all_pus))
            })
            .collect();
        if numa_nodes.len() > MAX_NUMA_NODES {
            return Err(TopologyError::TooManyObjects {
                source_name: source,
                count: numa_nodes.len(),
                what: "NUMA nodes",
            });
        }
        numa_nodes.sort_by_key(|(index, cpus)| (cpus.len(), *index));
        let mut unassigned = all_pus.clone();
        let mut node_cpus: Vec<(u32, CpuSet)> = Vec::new();
        for (index, cpus) in numa_nodes {
            let claimed = cpus.intersection(&unassigned);
            if !claimed.is_empty() {
                unassigned = unassigned.difference(&claimed);
                node_cpus.push((index, claimed));
            }
        }
        // PUs outside every node (no NUMA node at all, or a hand-made XML
        // file) join the lowest-numbered node, or form node 0 alone.
        if !unassigned.is_empty() {
            match node_cpus.iter_mut().min_by_key(|(index, _)| *index) {
                Some((_, cpus)) => *cpus = cpus.union(&unassigned),
                None => node_cpus.push((0, unassigned)),
            }
        }

        let mut hwloc_cores: Vec<CpuSet> = hwloc
            .objects_with_type(ObjectType::Core)
            .map(|core| hwloc_cpus(core, &all_pus))
            .filter(|cpus| !cpus.is_empty())
            .collect();
        let in_cores = hwloc_cores.iter().fold(CpuSet::new(), |union, core| union.union(core));
        hwloc_cores.extend(all_pus.difference(&in_cores).iter().map(|pu| CpuSet::from_iter([pu])));

        let all_pus_ref = &all_pus;
        let group_count: usize = GroupLevel::ALL
            .iter()
            .map(|level| hwloc.objects_with_type(level.hwloc_type()).count())
            .sum();
        if group_count > MAX_NUMA_NODES {
            return Err(TopologyError::TooManyObjects {
                source_name: source,
                count: group_count,
                what: "packages, dies and L3 caches",
            });
        }
        let groups = GroupLevel::ALL
            .into_iter()
            .flat_map(|level| {
                hwloc.objects_with_type(level.hwloc_type()).map(move |object| Group {
                    level,
                    index: saturating_u32(object.logical_index()),
                    cpus: hwloc_cpus(object, all_pus_ref),
                })
            })
            .filter(|group| !group.cpus.is_empty())
            .collect::<Vec<Group>>();
        // hwloc may nest objects of one type (two levels of L3 in a
        // synthetic string): keep the innermost, so a level's groups are
        // disjoint.
        let groups: Vec<Group> = groups
            .iter()
            .filter(|outer| {
                !groups.iter().any(|inner| {
                    inner.level == outer.level && inner.cpus != outer.cpus && inner.cpus.is_subset(&outer.cpus)
                })
            })
            .cloned()
            .collect();
        // Equal sets at one level (an object and its only child of the same
        // type) count once.
        let mut groups = groups;
        groups.sort_by_key(|group| (group.level, group.cpus.first(), group.index));
        groups.dedup_by(|a, b| a.level == b.level && a.cpus == b.cpus);

        // Each core goes to the nodes holding its PUs (one, unless a
        // hand-made file draws a core across nodes): linear in the PUs, where
        // intersecting every core with every node took seconds with hundreds
        // of nodes.
        let mut node_of_pu = vec![usize::MAX; all_pus.last().map_or(0, |last| last + 1)];
        for (position, (_, cpus)) in node_cpus.iter().enumerate() {
            for pu in cpus.iter() {
                node_of_pu[pu] = position;
            }
        }
        let mut node_cores: Vec<Vec<CpuSet>> = vec![Vec::new(); node_cpus.len()];
        for core in &hwloc_cores {
            let mut positions: Vec<usize> = core.iter().map(|pu| node_of_pu[pu]).collect();
            positions.sort_unstable();
            positions.dedup();
            for position in positions {
                if let Some((_, cpus)) = node_cpus.get(position) {
                    node_cores[position].push(core.intersection(cpus));
                }
            }
        }
        let nodes = node_cpus
            .into_iter()
            .zip(node_cores)
            .map(|((os_index, cpus), cores)| Node { os_index, cores, cpus })
            .collect();
        Ok(Topology::from_nodes(nodes, source)?
            .with_groups(groups)?
            .with_remote_ratio(numa_latency_ratio(hwloc)))
    }
}

/// A set of CPUs in the drawn tree: one or more groups or nodes with
/// exactly these CPUs, and the set it is drawn under.
struct NestedSet {
    labels: Vec<String>,
    cpus: CpuSet,
    parent: Option<usize>,
}

/// An upper bound on the PUs of a synthetic description: the product of
/// every number in it (a 0 counts as 1), except digits that are part of a
/// type name (`l3cache`) and attributes in parentheses. hwloc's parser is lenient (it reads
/// `2 2222pu:2` as 8888 PUs), so counting only `TYPE:COUNT` pairs let
/// larger descriptions through. [`Topology::from_synthetic`] refuses a
/// description over [`MAX_SYNTHETIC_PUS`] by this bound before hwloc sees it.
pub fn synthetic_pus_at_most(spec: &str) -> u64 {
    let mut product: u64 = 1;
    let mut depth = 0usize;
    let mut previous: Option<char> = None;
    let mut chars = spec.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            '0'..='9' if depth == 0 && !previous.is_some_and(|p| p.is_ascii_alphabetic() || p.is_ascii_digit()) => {
                let mut number = String::from(c);
                while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    number.push(d);
                    chars.next();
                }
                // hwloc refuses a count of 0, so a 0 here is part of a name
                // hwloc reads differently ("package\u{FFFD}0:99" is 99
                // packages): it must not zero the bound.
                product = product.saturating_mul(number.parse::<u64>().unwrap_or(u64::MAX).max(1));
                previous = number.chars().last();
                continue;
            }
            _ => {}
        }
        previous = Some(c);
    }
    product
}

fn centi_as_ratio<S: serde::Serializer>(centi: &Option<u32>, serializer: S) -> Result<S::Ok, S::Error> {
    match centi {
        Some(centi) => serializer.serialize_some(&(f64::from(*centi) / 100.0)),
        None => serializer.serialize_none(),
    }
}

/// The largest [`Topology::remote_ratio`] kept: firmware tables are
/// untrusted input, and no machine's remote memory is 16 times farther.
pub const MAX_REMOTE_RATIO: f64 = 16.0;

/// [`Topology::remote_ratio`] from hwloc's first latency matrix over two
/// NUMA nodes or more; pairs with a zero local distance are skipped.
fn numa_latency_ratio(hwloc: &hwlocality::Topology) -> Option<f64> {
    let matrices = hwloc.distances_with_type(None, ObjectType::NUMANode).ok()?;
    let matrix = matrices
        .iter()
        .find(|m| m.num_objects() >= 2 && m.kind().contains(DistancesKind::MEANS_LATENCY))?;
    let n = matrix.num_objects();
    let values = matrix.distances();
    let (mut sum, mut pairs) = (0.0, 0usize);
    for i in 0..n {
        let local = values[i * n + i];
        if local == 0 {
            continue;
        }
        for j in (0..n).filter(|&j| j != i) {
            sum += values[i * n + j] as f64 / local as f64;
            pairs += 1;
        }
    }
    (pairs > 0).then(|| sum / pairs as f64)
}

/// This machine through hwloc, without its x86 component: that component
/// binds the calling thread to each CPU in turn to read CPUID, then restores
/// the mask it found, which undoes a pin that pinlearn sets meanwhile on
/// that thread (a workload under `pinlearn run` reading the machine as it
/// starts, an in-process manager starting in one of a program's threads).
/// On Linux hwloc reads the NUMA nodes, cores, caches and packages from
/// sysfs. The caller holds [`HWLOC`].
fn this_machine() -> Result<hwlocality::Topology, String> {
    TopologyBuilder::new()
        .without_component("x86")
        .map_err(|error| error.to_string())?
        .build()
        .map_err(|error| error.to_string())
}

/// Held around every use of hwloc in this process, so that no other
/// thread is inside hwloc when [`survives_in_a_child`] forks.
static HWLOC: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// How long the trial of a description may take before it counts as hung.
/// The description is then read again in this process, so reading one can
/// take twice this at most. The largest accepted synthetic machine
/// (`package:16 core:128 pu:8`) loads in 1.4 s; afl found one with 4444
/// NUMA nodes that took hwloc 23 s per read (its object insertion is
/// quadratic in them).
const TRIAL_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// At most [`MAX_NUMA_NODES`] NUMA nodes and as many groups: what the
/// trial checks, so that a description refused for its size is read once.
fn within_limits(topology: &hwlocality::Topology) -> bool {
    let groups: usize = GroupLevel::ALL
        .iter()
        .map(|level| topology.objects_with_type(level.hwloc_type()).count())
        .sum();
    topology.objects_with_type(ObjectType::NUMANode).count() <= MAX_NUMA_NODES && groups <= MAX_NUMA_NODES
}

/// The trial's exit status for a description over [`within_limits`].
const TOO_LARGE: i32 = 3;

/// hwloc's parsers crash (SIGSEGV) on some malformed input, for example an
/// XML file with closing tags out of place, which would take pinlearn down
/// with them. A description from the user is first tried in a forked child;
/// only if the child survives, and `attempt` says the result is within
/// pinlearn's limits, is it read in this process. Call with [`HWLOC`] held.
/// Where fork fails the trial is skipped.
fn survives_in_a_child(attempt: impl FnOnce() -> bool) -> Result<(), String> {
    // SAFETY: the child only runs hwloc (no other thread is inside hwloc:
    // HWLOC is held; glibc's malloc is safe after fork) and leaves with
    // _exit, never returning into the caller.
    match unsafe { libc::fork() } {
        -1 => Ok(()),
        0 => {
            let no_core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: plain system calls in the child.
            unsafe { libc::setrlimit(libc::RLIMIT_CORE, &no_core) };
            let status = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(attempt)) {
                Ok(true) => 0,
                Ok(false) => TOO_LARGE,
                Err(_) => 1,
            };
            // SAFETY: ends the child without running the parent's destructors.
            unsafe { libc::_exit(status) }
        }
        child => {
            let started = std::time::Instant::now();
            let mut status: libc::c_int = 0;
            loop {
                // SAFETY: waits for our own child.
                let waited = unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) };
                if waited == child {
                    break;
                }
                if waited == -1 || started.elapsed() > TRIAL_LIMIT {
                    // SAFETY: kill and reap our own child.
                    unsafe {
                        libc::kill(child, libc::SIGKILL);
                        libc::waitpid(child, &mut status, 0);
                    }
                    return Err(format!(
                        "hwloc did not finish reading it within {} s",
                        TRIAL_LIMIT.as_secs()
                    ));
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            if libc::WIFSIGNALED(status) {
                return Err(format!(
                    "hwloc crashed reading it (signal {}); the file is damaged or not written by hwloc",
                    libc::WTERMSIG(status)
                ));
            }
            if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == TOO_LARGE {
                return Err(format!(
                    "it has more than {MAX_NUMA_NODES} NUMA nodes, or more than {MAX_NUMA_NODES} packages, dies and L3 caches; pinlearn handles at most {MAX_NUMA_NODES}"
                ));
            }
            Ok(())
        }
    }
}

/// The PUs of an hwloc object that are also in `all_pus`.
fn hwloc_cpus(object: &hwlocality::object::TopologyObject, all_pus: &CpuSet) -> CpuSet {
    let Some(bitmap) = object.cpuset() else {
        return CpuSet::new();
    };
    let highest = all_pus.last().unwrap_or(0);
    // Object CPU sets are finite, but stop at the highest PU regardless so
    // an infinite bitmap cannot loop forever.
    bitmap
        .iter_set()
        .map(usize::from)
        .take_while(|&cpu| cpu <= highest)
        .filter(|&cpu| all_pus.contains(cpu))
        .collect()
}

fn saturating_u32(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("{count} {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// `prefix` then `words` separated by spaces, wrapped at `width` with
/// continuation lines indented to the end of `prefix`.
fn wrap_words(prefix: &str, words: &[String], width: usize) -> String {
    let indent = " ".repeat(prefix.len());
    let mut text = String::new();
    let mut line = prefix.to_string();
    let mut line_has_word = false;
    for word in words {
        if line_has_word && line.len() + 1 + word.len() > width {
            text.push_str(&line);
            text.push('\n');
            line = indent.clone();
            line_has_word = false;
        }
        if line_has_word {
            line.push(' ');
        }
        line.push_str(word);
        line_has_word = true;
    }
    text.push_str(&line);
    text.push('\n');
    text
}
