//! Heat conduction on a plate (paper 001 §5.2): cycles of parallel
//! computation and a global barrier, each thread working on its own stripe
//! of the plate, its memory first touched by itself.
//!
//! ```text
//!   plate: rows x cols cells; row 0 held at 1.0 (the hot edge), the last row
//!   and both side columns at 0.0; the interior rows are split into one
//!   stripe per thread "heat-t", allocated and filled by that thread
//!   (--mode bound: after it pinned itself to the t-th allowed CPU;
//!    --mode bubbles: after pinlearn, started inside this process, placed
//!    it: one bubble per NUMA node holding consecutive threads, woken up
//!    before any thread touches its stripe)
//!
//!   step s = 1..steps, every thread:
//!     new[i][j] = (old[i-1][j] + old[i+1][j] + old[i][j-1] + old[i][j+1]) / 4
//!       for its rows; the rows just outside its stripe come from its
//!       neighbours' edges published at step s-1 (double-buffered by parity)
//!     publish its first and last row for step s ── barrier ── work_done(1)
//!
//!   total heat = sum of the interior after the last step; the same plate
//!   computed by one thread gives the same sum bit for bit (checked by the tests)
//! ```
//!
//! # What it models
//!
//! The heat-conduction program of the bubbles paper: a stencil whose threads
//! share only the edges of their stripes and meet at a barrier every step,
//! so where a thread's memory lies (first touch) and whether the threads
//! that exchange edges share a node decide its speed on a NUMA machine. The
//! paper ran it three ways: `simple` (no placement, the OS decides), `bound`
//! (thread i pinned to processor i by hand) and bubbles (one bubble per node
//! built from a topology query); here `--mode simple|bound|bubbles`, the
//! third through pinlearn's in-process bubble API exactly as the paper's
//! program did (or, unmodified, `--mode simple` under `pinlearn run --policy
//! bubbles --bubbles RULES`).
//!
//! # Options
//!
//! `--rows N` (default 4096), `--cols N` (default 1024): 2 x 32 MiB of
//! cells at the defaults; `--steps N` (default 300); `--mode
//! simple|bound|bubbles`; with bubbles, `topology` (and `topology_map`) to
//! place on a given topology instead of the machine's.

use crate::barrier::{Barrier, SyncMode};
use crate::common::{Common, WorkError, allowed_cpu_list, allowed_cpus, bubbles_manager, pin_to};
pub use crate::common::{Mode, Placed};
use pinlearn_engine::{BubbleApi, BubbleId, Manager};
use pinlearn_topology::CpuSet;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The temperature of the hot edge (row 0).
const HOT: f64 = 1.0;

/// Options of the heat workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub rows: usize,
    pub cols: usize,
    pub steps: u32,
    pub mode: Mode,
    /// `--mode bubbles`: place on this topology (a synthetic string or an
    /// XML file) instead of the machine's, its PUs standing for the real
    /// CPUs of `topology_map`.
    pub topology: Option<String>,
    pub topology_map: Option<CpuSet>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rows: 4096,
            cols: 1024,
            steps: 300,
            mode: Mode::Simple,
            topology: None,
            topology_map: None,
        }
    }
}

/// What a heat run computed.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Report {
    pub rows: usize,
    pub cols: usize,
    pub steps: u32,
    pub mode: &'static str,
    /// Sum of the interior cells after the last step.
    pub total_heat: f64,
    /// Interior cells updated per second, in millions.
    pub mcells_per_s: f64,
    /// CPUs the threads pinned themselves to (`bound` only), by thread.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bound_to: Vec<usize>,
    /// `bubbles` only: each thread's bubble and the CPUs it had right
    /// after the wake-up, by thread.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub placed: Vec<Placed>,
}

/// `--mode bubbles`: pinlearn's manager in this process and one bubble per
/// NUMA node, outermost first.
struct NodeBubbles {
    manager: Manager,
    bubbles: Vec<(BubbleId, String)>,
}

impl NodeBubbles {
    fn start(opts: &Options) -> Result<Self, WorkError> {
        let manager = bubbles_manager(opts.topology.as_deref(), opts.topology_map.as_ref())?;
        let placement = |e: pinlearn_engine::EngineError| WorkError::Affinity(format!("pinlearn: {e}"));
        let registrar = manager.registrar();
        let nodes = registrar.places("node").map_err(placement)?.max(1);
        let mut bubbles = Vec::with_capacity(nodes);
        for node in 0..nodes {
            let name = format!("heat node {node}");
            let bubble = registrar.create(Some(&name), None).map_err(placement)?;
            if registrar.places("node").map_err(placement)? > 0 {
                registrar.set_burst(bubble, Some("node")).map_err(placement)?;
            }
            bubbles.push((bubble, name));
        }
        Ok(NodeBubbles { manager, bubbles })
    }

    /// The bubble of thread `t` of `threads`: consecutive threads together.
    fn of(&self, t: usize, threads: usize) -> &(BubbleId, String) {
        &self.bubbles[t * self.bubbles.len() / threads]
    }
}

/// The first interior row of thread `t`'s stripe and the row after it.
fn stripe(t: usize, threads: usize, interior: usize) -> (usize, usize) {
    (1 + interior * t / threads, 1 + interior * (t + 1) / threads)
}

/// The edges every thread publishes: `[parity][thread]` = (first row, last row).
type Edges = [Vec<Mutex<(Vec<f64>, Vec<f64>)>>; 2];

/// One Jacobi step of the rows `old` (a stripe, row-major, `cols` wide) into
/// `new`, with `above` and `below` the rows just outside the stripe.
fn step_stripe(old: &[f64], new: &mut [f64], above: &[f64], below: &[f64], cols: usize) {
    let rows = old.len() / cols;
    for i in 0..rows {
        let up = if i == 0 { above } else { &old[(i - 1) * cols..i * cols] };
        let down = if i + 1 == rows {
            below
        } else {
            &old[(i + 1) * cols..(i + 2) * cols]
        };
        let row = &old[i * cols..(i + 1) * cols];
        let out = &mut new[i * cols..(i + 1) * cols];
        out[0] = 0.0;
        out[cols - 1] = 0.0;
        for j in 1..cols - 1 {
            out[j] = 0.25 * (up[j] + down[j] + row[j - 1] + row[j + 1]);
        }
    }
}

/// Runs the heat workload.
pub fn run(opts: &Options, common: &Common) -> Result<Report, WorkError> {
    if opts.cols < 3 || opts.steps == 0 {
        return Err(WorkError::BadInput(
            "--cols must be at least 3 and --steps at least 1".into(),
        ));
    }
    let threads = common.threads;
    let interior = opts.rows.saturating_sub(2);
    if interior < threads {
        return Err(WorkError::BadInput(format!(
            "--rows {} leaves {interior} interior rows, fewer than the {threads} threads (each needs one)",
            opts.rows
        )));
    }
    if opts.rows.checked_mul(opts.cols).is_none_or(|cells| cells > 1 << 30) {
        return Err(WorkError::BadInput(format!(
            "--rows {} x --cols {} is more than 2^30 cells (16 GiB with both buffers)",
            opts.rows, opts.cols
        )));
    }
    let cpus = match opts.mode {
        Mode::Bound => allowed_cpus()?,
        Mode::Simple | Mode::Bubbles => Vec::new(),
    };
    if opts.mode != Mode::Bubbles && opts.topology.is_some() {
        return Err(WorkError::BadInput(
            "--topology is for --mode bubbles (the other modes leave placement to the OS or pin by CPU number)".into(),
        ));
    }
    let bubbles = match opts.mode {
        Mode::Bubbles => Some(NodeBubbles::start(opts)?),
        Mode::Simple | Mode::Bound => None,
    };
    // Every thread is in its bubble before the wake-up, and placed before
    // it touches its stripe.
    let (inserted, woken) = (std::sync::Barrier::new(threads), std::sync::Barrier::new(threads));
    let cols = opts.cols;
    let hot = vec![HOT; cols];
    let cold = vec![0.0; cols];
    let edges: Edges = std::array::from_fn(|_| {
        (0..threads)
            .map(|_| Mutex::new((vec![0.0; cols], vec![0.0; cols])))
            .collect()
    });
    let barrier = Barrier::new(threads, SyncMode::Block, Duration::ZERO);
    common.start(
        &format!("heat ({})", opts.mode.name()),
        u64::from(opts.steps) * threads as u64,
    );
    let started = std::time::Instant::now();
    let per_thread = common.spawn_workers("heat", |t| -> Result<(f64, Option<usize>, Option<Placed>), WorkError> {
        let bound = match opts.mode {
            Mode::Bound => {
                let cpu = cpus[t % cpus.len()];
                pin_to(cpu)?;
                Some(cpu)
            }
            Mode::Simple | Mode::Bubbles => None,
        };
        let placed = match &bubbles {
            Some(bubbles) => {
                let registrar = bubbles.manager.registrar();
                let (bubble, name) = bubbles.of(t, threads);
                let joined = registrar.insert_current_thread(*bubble);
                inserted.wait();
                let woke = if t == 0 { registrar.wake_up(*bubble) } else { Ok(()) };
                woken.wait();
                joined
                    .and(woke)
                    .map_err(|e| WorkError::Affinity(format!("pinlearn: {e}")))?;
                Some(Placed {
                    bubble: name.clone(),
                    cpus: allowed_cpu_list()?,
                })
            }
            None => None,
        };
        let (first, end) = stripe(t, threads, interior);
        // Allocated and first touched here, after pinning: the pages land
        // on this thread's node.
        let mut old = vec![0.0f64; (end - first) * cols];
        let mut new = vec![0.0f64; (end - first) * cols];
        old.fill(0.0);
        new.fill(0.0);
        let lock = |parity: usize, thread: usize| edges[parity][thread].lock().unwrap_or_else(PoisonError::into_inner);
        // The neighbours' edges are copied out, so no lock is held while computing.
        let (mut above, mut below) = (hot.clone(), cold.clone());
        for step in 1..=opts.steps {
            let previous = (step as usize + 1) % 2;
            if t > 0 {
                above.copy_from_slice(&lock(previous, t - 1).1);
            }
            if t + 1 < threads {
                below.copy_from_slice(&lock(previous, t + 1).0);
            }
            step_stripe(&old, &mut new, &above, &below, cols);
            std::mem::swap(&mut old, &mut new);
            {
                let mut own = lock(step as usize % 2, t);
                let rows = old.len() / cols;
                own.0.copy_from_slice(&old[..cols]);
                own.1.copy_from_slice(&old[(rows - 1) * cols..]);
            }
            barrier.wait();
            common.work_done(1);
        }
        Ok((old.iter().sum(), bound, placed))
    })?;
    let elapsed = started.elapsed().as_secs_f64();
    common.finish();
    if let Some(bubbles) = bubbles {
        bubbles
            .manager
            .stop()
            .map_err(|e| WorkError::Affinity(format!("pinlearn: {e}")))?;
    }
    let mut total_heat = 0.0;
    let mut bound_to = Vec::new();
    let mut placed = Vec::new();
    for result in per_thread {
        let (heat, bound, place) = result?;
        total_heat += heat;
        bound_to.extend(bound);
        placed.extend(place);
    }
    if !(total_heat.is_finite() && total_heat > 0.0) {
        return Err(WorkError::WrongResult(format!(
            "total heat {total_heat} after {} steps",
            opts.steps
        )));
    }
    Ok(Report {
        rows: opts.rows,
        cols,
        steps: opts.steps,
        mode: opts.mode.name(),
        total_heat,
        mcells_per_s: (interior * (cols - 2)) as f64 * f64::from(opts.steps) / elapsed / 1e6,
        bound_to,
        placed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole plate stepped by one loop, for comparison.
    fn sequential(rows: usize, cols: usize, steps: u32) -> f64 {
        let mut old = vec![0.0; rows * cols];
        old[..cols].fill(HOT);
        let mut new = old.clone();
        for _ in 0..steps {
            for i in 1..rows - 1 {
                for j in 1..cols - 1 {
                    new[i * cols + j] = 0.25
                        * (old[(i - 1) * cols + j]
                            + old[(i + 1) * cols + j]
                            + old[i * cols + j - 1]
                            + old[i * cols + j + 1]);
                }
            }
            std::mem::swap(&mut old, &mut new);
        }
        // Summed stripe by stripe in row order, as the threads do.
        old[cols..(rows - 1) * cols].iter().sum()
    }

    fn heat(threads: usize, opts: &Options) -> Report {
        let common = Common::new(threads, 1, true).unwrap().without_heartbeats();
        run(opts, &common).unwrap()
    }

    #[test]
    fn stripes_compute_what_one_loop_computes() {
        let opts = Options {
            rows: 40,
            cols: 17,
            steps: 25,
            mode: Mode::Simple,
            ..Options::default()
        };
        let expected = sequential(40, 17, 25);
        for threads in [1, 3, 4] {
            let report = heat(threads, &opts);
            // Sums per stripe then over stripes: equal up to rounding.
            assert!(
                (report.total_heat - expected).abs() <= 1e-12 * expected,
                "{threads} threads: {} vs {expected}",
                report.total_heat
            );
        }
        assert!(expected > 0.5, "heat spread from the hot edge: {expected}");
    }

    #[test]
    fn bound_threads_pin_themselves_to_their_cpus() {
        let cpus = allowed_cpus().unwrap();
        let opts = Options {
            rows: 20,
            cols: 8,
            steps: 3,
            mode: Mode::Bound,
            ..Options::default()
        };
        let report = heat(2, &opts);
        assert_eq!(report.bound_to, vec![cpus[0], cpus[1 % cpus.len()]]);
    }

    #[test]
    fn bubbles_put_each_half_of_the_threads_on_its_own_node_before_the_first_touch() {
        let cpus = allowed_cpus().unwrap();
        assert!(cpus.len() >= 2, "needs two CPUs");
        let map: CpuSet = cpus[..2].iter().copied().collect();
        let opts = Options {
            rows: 40,
            cols: 17,
            steps: 25,
            mode: Mode::Bubbles,
            topology: Some("node:2 core:1 pu:1".into()),
            topology_map: Some(map),
        };
        let report = heat(4, &opts);
        let expected = sequential(40, 17, 25);
        assert!((report.total_heat - expected).abs() <= 1e-12 * expected);
        let placed: Vec<(&str, &str)> = report
            .placed
            .iter()
            .map(|p| (p.bubble.as_str(), p.cpus.as_str()))
            .collect();
        let (first, second) = (cpus[0].to_string(), cpus[1].to_string());
        let on = |cpu: &str| -> Vec<&str> { placed.iter().filter(|(_, c)| *c == cpu).map(|(b, _)| *b).collect() };
        assert_eq!(placed.len(), 4, "{placed:?}");
        let (a, b) = (on(&first), on(&second));
        assert_eq!((a.len(), b.len()), (2, 2), "two threads per node: {placed:?}");
        assert!(
            a[0] == a[1] && b[0] == b[1] && a[0] != b[0],
            "one bubble per node: {placed:?}"
        );
        assert_eq!(
            [placed[0].0, placed[2].0],
            ["heat node 0", "heat node 1"],
            "consecutive threads share a bubble"
        );
        // The manager stopped and put every mask back.
        assert_eq!(allowed_cpus().unwrap(), cpus);
    }

    #[test]
    fn a_topology_is_only_for_bubbles() {
        let common = Common::new(2, 1, true).unwrap().without_heartbeats();
        let opts = Options {
            topology: Some("node:2 core:1 pu:1".into()),
            ..Options::default()
        };
        let err = run(&opts, &common).unwrap_err().to_string();
        assert!(err.contains("--topology is for --mode bubbles"), "{err}");
        let unmapped = Options {
            mode: Mode::Bubbles,
            topology: Some("node:2 core:1 pu:1".into()),
            ..Options::default()
        };
        let err = run(&unmapped, &common).unwrap_err().to_string();
        assert!(err.contains("add --topology-map LIST"), "{err}");
    }

    #[test]
    fn too_few_rows_or_columns_are_refused() {
        let common = Common::new(8, 1, true).unwrap().without_heartbeats();
        let few_rows = Options {
            rows: 6,
            ..Options::default()
        };
        assert!(matches!(run(&few_rows, &common), Err(WorkError::BadInput(_))));
        let narrow = Options {
            cols: 2,
            ..Options::default()
        };
        assert!(matches!(run(&narrow, &common), Err(WorkError::BadInput(_))));
    }
}
