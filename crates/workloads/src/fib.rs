//! Divide-and-conquer Fibonacci (paper 001 §5.1): a tree of threads, each
//! computing fib(n) by starting two threads for fib(n-1) and fib(n-2) and
//! adding what they return, down to the leaves, which compute sequentially.
//!
//! ```text
//!   fib(n) with L leaves (thread "fib")          --mode bubbles: bubble "fib"
//!     ├─ fib(n-1), ceil(L/2) leaves ("fib-0")       holds thread fib and its two
//!     │    ├─ fib(n-2), ... ("fib-00")              children; thread fib-0 moves
//!     │    └─ fib(n-3), ... ("fib-01")              into bubble "fib-0" (nested in
//!     └─ fib(n-2), floor(L/2) leaves ("fib-1")      "fib") with fib-00 and fib-01;
//!          └─ ...                                   each bubble is woken up (placed)
//!                                                   before its children compute
//!   leaf fib(m): naive recursion; every sub-call of size <= grain is one unit
//!   of work (work_done(1), a heartbeat); parents block in join
//!
//!   result = sum up the tree; checked against the iterative fib(n)
//! ```
//!
//! # What it models
//!
//! The paper's first test of bubbles: threads created recursively, so the
//! threads that share an ancestor form a natural nested group, and a
//! scheduler that keeps each group on one part of the machine (bubbles
//! nested as the recursion) spreads the work as the tree unfolds instead of
//! piling it where the parents ran. The two halves of a split are unequal
//! (fib(n-1) is about 1.6 times fib(n-2)): the leaf counts are split the same
//! way as the thread count, not the work. Inner threads wait blocked in join
//! for the whole run, as the paper's do.
//!
//! # Options
//!
//! `--n N` (default 42), `--grain G` (default 24: a unit of work is a naive
//! fib(24) or smaller, well under a millisecond); `--threads` is the number of
//! leaves (the run creates 2 x leaves - 1 threads); `--mode simple|bound|bubbles`
//! (bound: leaf i pins itself to the i-th CPU, the hand-made binding);
//! with bubbles, `topology` (and `topology_map`) to place on a given topology
//! instead of the machine's.

pub use crate::common::Mode;
use crate::common::{Common, Placed, StartGate, WorkError, allowed_cpu_list, allowed_cpus, bubbles_manager, pin_to};
use pinlearn_engine::{BubbleApi, BubbleId, EngineError, Manager};
use pinlearn_topology::CpuSet;

/// Largest `--n`: fib(93) is the last Fibonacci number that fits in 64 bits,
/// and the naive recursion's time doubles every 1.44 steps long before that.
pub const MAX_N: u32 = 64;

/// Most leaves (threads = 2 x leaves - 1).
pub const MAX_LEAVES: usize = 4096;

/// Options of the fib workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub n: u32,
    pub grain: u32,
    pub mode: Mode,
    /// `--mode bubbles`: place on this topology (a synthetic string or an
    /// XML file) instead of the machine's.
    pub topology: Option<String>,
    pub topology_map: Option<CpuSet>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            n: 42,
            grain: 24,
            mode: Mode::Simple,
            topology: None,
            topology_map: None,
        }
    }
}

/// What a fib run computed.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Report {
    pub n: u32,
    pub fib: u64,
    pub mode: &'static str,
    pub leaves: usize,
    /// Threads the run created: the leaves and the inner nodes that wait for them.
    pub threads_created: usize,
    /// Longest path from the first thread to a leaf.
    pub depth: usize,
    /// Units of work done (sub-calls of size <= grain), per second.
    pub units: u64,
    pub units_per_s: f64,
    /// `bubbles`: each leaf's bubble and its CPUs right after its bubble's
    /// wake-up; `bound`: each leaf's CPU (no bubble); in leaf order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub placed: Vec<Placed>,
}

/// fib(n), iteratively (the check).
pub fn fib(n: u32) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a.wrapping_add(b));
    }
    a
}

/// The naive recursion the leaves run (exponential on purpose: it is the work).
fn fib_naive(n: u32) -> u64 {
    if n < 2 {
        u64::from(n)
    } else {
        fib_naive(n - 1) + fib_naive(n - 2)
    }
}

/// fib(n) by the naive recursion, calling `unit` once per sub-call of size
/// at most `grain`.
fn fib_in_units(n: u32, grain: u32, unit: &mut impl FnMut()) -> u64 {
    if n <= grain {
        let value = fib_naive(std::hint::black_box(n));
        unit();
        value
    } else {
        fib_in_units(n - 1, grain, unit) + fib_in_units(n - 2, grain, unit)
    }
}

/// How many units [`fib_in_units`] reports for `n`.
fn units_of(n: u32, grain: u32) -> u64 {
    // u(m) = 1 for m <= grain, u(m-1) + u(m-2) above.
    let (mut previous, mut current) = (1u64, 1u64);
    for _ in grain.max(1)..n {
        (previous, current) = (current, previous.saturating_add(current));
    }
    if n <= grain { 1 } else { current }
}

/// The argument of every leaf, in leaf order (the first child, fib(n-1),
/// gets the larger half of the leaves), and the tree's depth.
fn leaves_of(n: u32, leaves: usize) -> (Vec<u32>, usize) {
    fn walk(n: u32, leaves: usize, depth: usize, out: &mut Vec<u32>, deepest: &mut usize) {
        if leaves <= 1 {
            out.push(n);
            *deepest = (*deepest).max(depth);
        } else {
            walk(n.saturating_sub(1), leaves.div_ceil(2), depth + 1, out, deepest);
            walk(n.saturating_sub(2), leaves / 2, depth + 1, out, deepest);
        }
    }
    let (mut out, mut deepest) = (Vec::with_capacity(leaves), 0);
    walk(n, leaves, 0, &mut out, &mut deepest);
    (out, deepest)
}

/// What every thread of the tree shares.
struct Tree<'a> {
    opts: &'a Options,
    common: &'a Common,
    manager: Option<Manager>,
    /// `--mode bound`: the CPUs this process may use; leaf i pins itself
    /// to the i-th, wrapping around.
    bound_cpus: Vec<usize>,
}

/// What one node of the tree returns: its value and, in leaf order, where
/// its leaves were placed.
type NodeResult = Result<(u64, Vec<Placed>), WorkError>;

fn pinlearn_error(e: EngineError) -> WorkError {
    WorkError::Affinity(format!("pinlearn: {e}"))
}

impl Tree<'_> {
    /// Runs the node computing fib(n) with `leaves` leaves, the first of
    /// them leaf number `first_leaf`, on the calling thread (named
    /// `fib-{path}`), which is in bubble `bubble` (bubbles only; the first
    /// node is in none).
    fn node(
        &self,
        n: u32,
        leaves: usize,
        first_leaf: usize,
        path: &str,
        bubble: Option<(BubbleId, &str)>,
    ) -> NodeResult {
        if leaves <= 1 {
            let placed = match bubble {
                Some((_, name)) => vec![Placed {
                    bubble: name.to_string(),
                    cpus: allowed_cpu_list()?,
                }],
                None if self.opts.mode == Mode::Bound => {
                    pin_to(self.bound_cpus[first_leaf % self.bound_cpus.len()])?;
                    vec![Placed {
                        bubble: String::new(),
                        cpus: allowed_cpu_list()?,
                    }]
                }
                None => Vec::new(),
            };
            let value = fib_in_units(n, self.opts.grain, &mut || self.common.work_done(1));
            return Ok((value, placed));
        }
        // The bubble holding this node's two children, nested in this node's.
        let inner_name = if path.is_empty() {
            "fib".to_string()
        } else {
            format!("fib-{path}")
        };
        // This thread moves into it too (it will wait there in join): a
        // bubble holds a creator and the threads it creates. It says it will
        // only wait (load 0), so the spread gives the cores to its children
        // rather than keep one for it, as Marcel knows a blocked thread.
        let me = pinlearn_engine::live::current_tid();
        let inner = match &self.manager {
            Some(manager) => {
                let registrar = manager.registrar();
                let inner = registrar
                    .create(Some(&inner_name), bubble.map(|(id, _)| id))
                    .map_err(pinlearn_error)?;
                if bubble.is_some() {
                    registrar.remove_thread(me).map_err(pinlearn_error)?;
                }
                registrar.insert_current_thread(inner).map_err(pinlearn_error)?;
                registrar.set_thread_load(me, Some(0.0)).map_err(pinlearn_error)?;
                Some(inner)
            }
            None => None,
        };
        let children = [
            (n - 1, leaves.div_ceil(2), first_leaf, '0'),
            (n - 2, leaves / 2, first_leaf + leaves.div_ceil(2), '1'),
        ];
        let gate = StartGate::default();
        // Both children are in the bubble before the wake-up, and placed
        // before they compute.
        let (inserted, woken) = (std::sync::Barrier::new(3), std::sync::Barrier::new(3));
        let (gate, inserted, woken, inner_name) = (&gate, &inserted, &woken, inner_name.as_str());
        std::thread::scope(|scope| {
            let mut handles = Vec::with_capacity(2);
            for (child_n, child_leaves, child_first, branch) in children {
                let spawned = std::thread::Builder::new()
                    .name(thread_name(&format!("fib-{path}{branch}")))
                    .spawn_scoped(scope, move || -> NodeResult {
                        if !gate.wait_for_all() {
                            return Ok((0, Vec::new()));
                        }
                        let joined = match (&self.manager, inner) {
                            (Some(manager), Some(inner)) => manager.registrar().insert_current_thread(inner),
                            _ => Ok(()),
                        };
                        inserted.wait();
                        woken.wait();
                        joined.map_err(pinlearn_error)?;
                        let path = format!("{path}{branch}");
                        self.node(
                            child_n,
                            child_leaves,
                            child_first,
                            &path,
                            inner.map(|id| (id, inner_name)),
                        )
                    });
                match spawned {
                    Ok(handle) => handles.push(handle),
                    Err(e) => {
                        gate.open(false);
                        for handle in handles {
                            let _ = handle.join();
                        }
                        return Err(WorkError::Spawn(e));
                    }
                }
            }
            gate.open(true);
            inserted.wait();
            let woke = match (&self.manager, inner) {
                (Some(manager), Some(inner)) => manager.registrar().wake_up(inner),
                _ => Ok(()),
            };
            woken.wait();
            let mut value = 0u64;
            let mut placed = Vec::new();
            for handle in handles {
                let (child_value, child_placed) =
                    handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
                value = value.wrapping_add(child_value);
                placed.extend(child_placed);
            }
            // Its declared load goes with it when it ends: the manager
            // forgets the bubble and load of a thread it has seen end.
            woke.map_err(pinlearn_error)?;
            Ok((value, placed))
        })
    }
}

/// A thread name of at most 15 bytes (the kernel's limit): long paths keep
/// their last digits, which tell siblings apart.
fn thread_name(name: &str) -> String {
    if name.len() <= 15 {
        name.to_string()
    } else {
        format!("fib~{}", &name[name.len() - 11..])
    }
}

/// Runs the fib workload with `common.threads` leaves.
pub fn run(opts: &Options, common: &Common) -> Result<Report, WorkError> {
    let leaves = common.threads;
    if opts.n > MAX_N {
        return Err(WorkError::BadInput(format!(
            "--n {} is above {MAX_N} (the naive recursion would run for days)",
            opts.n
        )));
    }
    if leaves > MAX_LEAVES {
        return Err(WorkError::BadInput(format!(
            "--threads {leaves} leaves is above {MAX_LEAVES} (the run would create {} threads)",
            2 * leaves - 1
        )));
    }
    let (leaf_ns, depth) = leaves_of(opts.n, leaves);
    // Every split takes 1 and 2 off n: the smallest leaf gets n - 2 x depth.
    if u64::from(opts.n) < 2 * depth as u64 + 1 {
        return Err(WorkError::BadInput(format!(
            "--n {} is too small for {leaves} leaves: the tree is {depth} deep and each level takes up to 2 off n; use --n {} or more",
            opts.n,
            2 * depth + 1
        )));
    }
    if opts.mode != Mode::Bubbles && opts.topology.is_some() {
        return Err(WorkError::BadInput(
            "--topology is for --mode bubbles (the other modes leave placement to the OS or pin by CPU number)".into(),
        ));
    }
    let units: u64 = leaf_ns.iter().map(|&m| units_of(m, opts.grain)).sum();
    let manager = match opts.mode {
        Mode::Bubbles => Some(bubbles_manager(opts.topology.as_deref(), opts.topology_map.as_ref())?),
        Mode::Simple | Mode::Bound => None,
    };
    let bound_cpus = match opts.mode {
        Mode::Bound => allowed_cpus()?,
        Mode::Simple | Mode::Bubbles => Vec::new(),
    };
    let tree = Tree {
        opts,
        common,
        manager,
        bound_cpus,
    };
    common.start(&format!("fib({}) ({})", opts.n, opts.mode.name()), units);
    let started = std::time::Instant::now();
    // The first node runs on its own thread "fib", like every other one;
    // its children's bubble is the outermost.
    let result = std::thread::scope(|scope| {
        let tree = &tree;
        std::thread::Builder::new()
            .name("fib".into())
            .spawn_scoped(scope, move || tree.node(opts.n, leaves, 0, "", None))
            .map_err(WorkError::Spawn)?
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    });
    let elapsed = started.elapsed().as_secs_f64();
    common.finish();
    if let Some(manager) = tree.manager {
        manager.stop().map_err(pinlearn_error)?;
    }
    let (value, placed) = result?;
    if value != fib(opts.n) {
        return Err(WorkError::WrongResult(format!(
            "fib({}) came out {value}, not {}",
            opts.n,
            fib(opts.n)
        )));
    }
    Ok(Report {
        n: opts.n,
        fib: value,
        mode: opts.mode.name(),
        leaves,
        threads_created: 2 * leaves - 1,
        depth,
        units,
        units_per_s: units as f64 / elapsed.max(1e-9),
        placed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn common(leaves: usize) -> Common {
        Common::new(leaves, 1, true).unwrap().without_heartbeats()
    }

    #[test]
    fn the_tree_of_threads_computes_fib() {
        for leaves in [1, 2, 3, 5, 8] {
            let opts = Options {
                n: 24,
                grain: 12,
                ..Options::default()
            };
            let report = run(&opts, &common(leaves)).unwrap();
            assert_eq!(report.fib, 46368, "{leaves} leaves");
            assert_eq!(report.threads_created, 2 * leaves - 1);
            assert!(report.units > 0);
        }
    }

    #[test]
    fn leaves_split_like_the_thread_count_and_units_count_the_grain_calls() {
        let (ns, depth) = leaves_of(10, 5);
        assert_eq!(ns, vec![7, 6, 7, 7, 6]);
        assert_eq!(depth, 3);
        // fib(10) = fib(9) + fib(8): with a grain of 8, 9 splits into 8 and 7.
        assert_eq!(units_of(10, 8), 3);
        assert_eq!(units_of(8, 8), 1);
        let mut counted = 0;
        assert_eq!(fib_in_units(20, 10, &mut || counted += 1), fib(20));
        assert_eq!(counted, units_of(20, 10));
        assert_eq!(fib(93), 12_200_160_415_121_876_738);
    }

    #[test]
    fn bad_sizes_are_refused_before_any_thread_starts() {
        let too_big = Options {
            n: MAX_N + 1,
            ..Options::default()
        };
        assert!(matches!(run(&too_big, &common(2)), Err(WorkError::BadInput(_))));
        let too_small = Options {
            n: 5,
            ..Options::default()
        };
        let err = run(&too_small, &common(16)).unwrap_err().to_string();
        assert!(err.contains("too small for 16 leaves"), "{err}");
        assert!(matches!(
            run(&Options::default(), &common(MAX_LEAVES + 1)),
            Err(WorkError::BadInput(_))
        ));
    }

    #[test]
    fn bound_leaves_pin_themselves_to_the_cpus_in_leaf_order() {
        let cpus = crate::common::allowed_cpus().unwrap();
        let opts = Options {
            n: 24,
            grain: 12,
            mode: Mode::Bound,
            ..Options::default()
        };
        let report = run(&opts, &common(5)).unwrap();
        assert_eq!(report.fib, fib(24));
        let got: Vec<&str> = report.placed.iter().map(|p| p.cpus.as_str()).collect();
        let want: Vec<String> = (0..5).map(|leaf| cpus[leaf % cpus.len()].to_string()).collect();
        assert_eq!(got, want, "leaf i on the i-th CPU");
        assert!(report.placed.iter().all(|p| p.bubble.is_empty()));
        let with_topology = Options {
            topology: Some("node:2 core:1 pu:1".into()),
            ..opts
        };
        let err = run(&with_topology, &common(2)).unwrap_err().to_string();
        assert!(err.contains("--topology is for --mode bubbles"), "{err}");
    }

    #[test]
    fn long_paths_keep_thread_names_within_the_kernel_limit() {
        assert_eq!(thread_name("fib-0101"), "fib-0101");
        let long = thread_name("fib-0101010101010111");
        assert!(long.len() <= 15, "{long}");
        assert!(long.ends_with("10101010111"), "{long}");
    }

    #[test]
    fn bubbles_nest_as_the_recursion_and_the_leaves_spread_over_the_nodes() {
        let cpus = crate::common::allowed_cpus().unwrap();
        assert!(cpus.len() >= 2, "needs two CPUs");
        let map: CpuSet = cpus[..2].iter().copied().collect();
        let opts = Options {
            n: 26,
            grain: 14,
            mode: Mode::Bubbles,
            topology: Some("node:2 core:1 pu:1".into()),
            topology_map: Some(map),
        };
        let report = run(&opts, &common(4)).unwrap();
        assert_eq!(report.fib, fib(26));
        let placed: Vec<(&str, &str)> = report
            .placed
            .iter()
            .map(|p| (p.bubble.as_str(), p.cpus.as_str()))
            .collect();
        assert_eq!(
            placed.iter().map(|(b, _)| *b).collect::<Vec<_>>(),
            ["fib-0", "fib-0", "fib-1", "fib-1"],
            "each pair of leaves in its parent's bubble: {placed:?}"
        );
        // Each leaf right after its wake-up holds one node's CPU, and the
        // leaves use both nodes. (Which node each gets depends on when the
        // sibling bubble wakes up; bubbles of three threads do not fit a
        // single-core node, so the spread may open them: the golden
        // placements are the policy's tests, crates/policy/tests/bubbles.rs.)
        let (first, second) = (cpus[0].to_string(), cpus[1].to_string());
        assert!(
            placed.iter().all(|(_, c)| *c == first || *c == second),
            "every leaf on one node's CPU: {placed:?}"
        );
        assert!(
            placed.iter().any(|(_, c)| *c == first) && placed.iter().any(|(_, c)| *c == second),
            "the leaves spread over both nodes: {placed:?}"
        );
        assert_eq!(crate::common::allowed_cpus().unwrap(), cpus, "masks restored");
    }
}
