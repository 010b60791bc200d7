//! Everything decided before the first syscall that changes anything.
//!
//! ```text
//!   Settings + --cpus + the target's allowed CPUs + topology
//!      │ Session::prepare   (all validation happens here: bad input never
//!      │                     leaves a thread pinned, because nothing is pinned yet)
//!      ▼
//!   Session { places, metric (resolved), note for the user, trace file }
//!      │ engine()  ──► Engine with the chosen policy
//! ```

use crate::EngineError;
use crate::bubbles::BubbleRules;
use crate::config::{Metric, PolicyChoice, Settings};
use crate::declared::DeclaredBubbles;
use crate::engine::Engine;
use crate::live::resolve_metric;
use crate::places::Places;
use crate::trace::Trace;
use pinlearn_policy::{OsPolicy, Policy, StaticPolicy};
use pinlearn_topology::{CpuSet, Topology};
use std::path::PathBuf;

/// What the user asked for, before checking.
#[derive(Clone, Debug, Default)]
pub struct Request {
    pub settings: Settings,
    /// `--cpus`: restrict to these CPUs (must lie within the allowed ones).
    pub cpus: Option<CpuSet>,
    /// `--trace FILE`.
    pub trace: Option<PathBuf>,
    /// `--bubbles FILE`: rules putting threads in bubbles (`--policy bubbles`).
    pub bubbles: Option<PathBuf>,
    /// The pinlearn binary, to start `pinlearn watchdog` beside a
    /// supervision (it restores the masks if the manager dies); `None`: no
    /// watchdog (the journal still allows `pinlearn restore PID`).
    pub watchdog: Option<PathBuf>,
}

/// A checked plan for one supervision.
pub struct Session {
    pub settings: Settings,
    pub topology: Topology,
    pub places: Places,
    /// The metric actually used (never `Auto`).
    pub metric: Metric,
    /// Said once to the user (why `auto` fell back to `cpu`, why memory
    /// binding does nothing here, ...).
    pub notes: Vec<String>,
    /// OS index of each layout node's memory, when memory binding is on and
    /// the nodes are real memory nodes.
    pub memory_nodes: Option<Vec<u32>>,
    /// The same, when threads' memory follows them (`move_thread_memory`).
    pub thread_memory_nodes: Option<Vec<u32>>,
    pub trace: Option<PathBuf>,
    pub watchdog: Option<PathBuf>,
    /// The bubbles of `--bubbles`, checked against the topology.
    pub bubbles: Option<BubbleRules>,
    /// With the bubbles policy and no rules file: the bubbles the program
    /// declares (in-process, or over its bubble channel from outside).
    pub declared: Option<DeclaredBubbles>,
    /// The whole machine and `--cpus`, to place anew when a cgroup cpuset changes.
    machine: Topology,
    cpus_flag: Option<CpuSet>,
}

impl Session {
    /// Validates the request against the CPUs the target may use
    /// (`allowed`: its affinity when pinlearn started, which already
    /// reflects cgroup cpusets) and the machine's topology.
    pub fn prepare(request: &Request, allowed: &CpuSet, machine: &Topology) -> Result<Self, EngineError> {
        request.settings.validate()?;
        let allowed = match &request.cpus {
            Some(cpus) => {
                if cpus.is_empty() {
                    return Err(EngineError::bad_input("--cpus is empty: give a CPU list such as 0-3,8"));
                }
                let outside = cpus.difference(allowed);
                if !outside.is_empty() {
                    return Err(EngineError::bad_input(format!(
                        "--cpus {cpus}: CPUs {outside} are outside the CPUs the target may use ({allowed})"
                    )));
                }
                cpus.clone()
            }
            None => allowed.clone(),
        };
        let topology = machine
            .restrict(&allowed)
            .map_err(|e| EngineError::bad_input(e.to_string()))?;
        let bubbles = match &request.bubbles {
            None => None,
            Some(_) if !request.settings.policy.places_bubbles() => {
                return Err(EngineError::bad_input(format!(
                    "--bubbles is read by the bubbles policy, not by {}: add --policy bubbles (or bubbles+learn)",
                    request.settings.policy
                )));
            }
            Some(path) => {
                let rules = BubbleRules::read(path)?;
                rules.check_levels(&Places::new(&topology).tree())?;
                Some(rules)
            }
        };
        if let Some(path) = &request.trace {
            // Fail now, before anything runs, if the trace cannot be written.
            Trace::create(path)?;
        }
        let (metric, metric_note) = resolve_metric(request.settings.metric).map_err(EngineError::bad_input)?;
        let mut notes: Vec<String> = metric_note.into_iter().collect();
        let real_nodes = (topology.nodes().len() >= 2 && topology.source().starts_with("hwloc"))
            .then(|| topology.nodes().iter().map(|n| n.os_index).collect::<Vec<u32>>());
        let memory_nodes = match request.settings.memory_binding {
            None => None,
            Some(_) if topology.nodes().len() < 2 => {
                notes.push("memory binding: one NUMA node here, so there is no memory to move".into());
                None
            }
            Some(_) if real_nodes.is_none() => {
                notes.push(format!(
                    "memory binding: the nodes of {} are groups of CPUs, not memory nodes; no memory is moved",
                    topology.source()
                ));
                None
            }
            Some(_) => real_nodes.clone(),
        };
        // One node: no memory to move, nothing to say (the default is on).
        let thread_memory_nodes = match (request.settings.move_thread_memory, &real_nodes) {
            (true, None) if topology.nodes().len() >= 2 => {
                notes.push(format!(
                    "threads' memory: the nodes of {} are groups of CPUs, not memory nodes; it stays where it was first touched",
                    topology.source()
                ));
                None
            }
            (true, Some(nodes)) => Some(nodes.clone()),
            _ => None,
        };
        let mut places = Places::on_this_machine(&topology);
        places.memory_moves_with_threads = thread_memory_nodes.is_some();
        let declared = (request.settings.policy.places_bubbles() && bubbles.is_none())
            .then(|| DeclaredBubbles::new(Some(places.burst_levels())));
        Ok(Session {
            settings: request.settings.clone(),
            places,
            topology,
            metric,
            notes,
            memory_nodes,
            thread_memory_nodes,
            trace: request.trace.clone(),
            watchdog: request.watchdog.clone(),
            bubbles,
            declared,
            machine: machine.clone(),
            cpus_flag: request.cpus.clone(),
        })
    }

    /// The policy this session asked for, over its places.
    pub fn policy(&self) -> Box<dyn Policy> {
        self.policy_over(&self.places)
    }

    /// The places within `effective` (a cgroup cpuset's CPUs, and `--cpus`)
    /// and a fresh policy over them; `None` if no CPU of the machine is left.
    pub fn replan(&self, effective: &CpuSet) -> Option<(Places, Box<dyn Policy>)> {
        let allowed = match &self.cpus_flag {
            Some(cpus) => effective.intersection(cpus),
            None => effective.clone(),
        };
        let topology = self.machine.restrict(&allowed).ok()?;
        let mut places = Places::on_this_machine(&topology);
        // Layout node i stays OS node nodes[i] only while the same nodes remain.
        let nodes: Vec<u32> = topology.nodes().iter().map(|n| n.os_index).collect();
        places.memory_moves_with_threads = self.thread_memory_nodes.as_ref() == Some(&nodes);
        let policy = self.policy_over(&places);
        Some((places, policy))
    }

    fn policy_over(&self, places: &Places) -> Box<dyn Policy> {
        let layout = places.layout.clone();
        match self.settings.policy {
            PolicyChoice::Learn => Box::new(self.settings.learn_policy(
                places,
                self.settings.learn,
                self.settings.seed,
            )),
            PolicyChoice::Static => Box::new(StaticPolicy::new(layout)),
            PolicyChoice::Os => Box::new(OsPolicy::new(layout)),
            PolicyChoice::Bubbles => Box::new(self.settings.bubbles_policy(places, false)),
            // A moved bubble's memory follows only where memory binding
            // moves pages (real memory nodes).
            PolicyChoice::BubblesLearn => Box::new(
                self.settings
                    .bubbles_policy(places, true)
                    .with_memory_following(self.memory_nodes.is_some()),
            ),
        }
    }

    /// A fresh engine for this session (creates the trace file).
    pub fn engine(&self) -> Result<Engine, EngineError> {
        let trace = self.trace.as_deref().map(Trace::create).transpose()?;
        let mut engine = Engine::new(self.policy(), self.places.clone(), self.settings.numa_every(), trace);
        if let Some(rules) = &self.bubbles {
            engine = engine.with_bubbles(rules.clone());
        }
        if let Some(declared) = &self.declared {
            engine = engine.with_declared_bubbles(declared.clone());
        }
        if self.thread_memory_nodes.is_some() {
            engine = engine.with_thread_memory(self.settings.numa_every());
        }
        Ok(match (self.settings.memory_binding, &self.memory_nodes) {
            (Some(zeta), Some(_)) => engine.with_memory_binding(zeta),
            _ => engine,
        })
    }

    /// The live target for `scope` under this session's settings.
    pub fn live_target(&self, scope: crate::live::Scope) -> crate::live::LiveProcess {
        let target = crate::live::LiveProcess::new(
            scope,
            self.metric,
            self.places.cpus.clone(),
            self.settings.interval.as_secs_f64(),
        )
        .following_program_affinity(self.settings.follow_program_affinity)
        .with_sampling(&self.settings.sampling);
        let target = match &self.thread_memory_nodes {
            Some(nodes) => target.with_thread_memory(
                nodes.clone(),
                self.topology.nodes().iter().map(|node| node.cpus.clone()).collect(),
            ),
            None => target,
        };
        match &self.memory_nodes {
            Some(nodes) => target.with_memory_nodes(nodes.clone()),
            None => target,
        }
    }

    /// The CPUs threads may be placed on.
    pub fn allowed(&self) -> CpuSet {
        self.topology.cpus()
    }
}
