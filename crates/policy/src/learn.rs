//! The learning policy: every core period a thread's perturbed learning
//! automaton draws a place inside its NUMA node (the papers), or with crowd
//! moves the thread keeps its core or moves to one where it gains, and
//! aspiration learning moves at most one thread to another node every NUMA
//! period.
//!
//! ```text
//!   decide(input)  (threads sorted by key)
//!     │
//!     ├─1─ reconcile with last period's threads (sorted merge)
//!     │      new thread  ─► k-th ever seen: core = all_cores[k mod ncores],
//!     │                     node = that core's node, PLA over
//!     │                     [cores of node..., node place (node_action)], current = core;
//!     │                     born in Linux's window: the next period's input says
//!     │                     where it runs (wants_cores), its memory's node (home)
//!     │      one ended   ─► reset_on_exit: everyone re-assigned round-robin
//!     │                     from scratch, in key order (fresh PLA + NUMA state)
//!     │      the learner's first period after Linux's (the guard): each
//!     │                     thread starts on the node Linux had it on
//!     │                     (beside its memory), on its cores round-robin;
//!     │                     where Linux crowded a node (1.5x the mean of
//!     │                     threads per core, or 1.25x while it left
//!     │                     another with half the mean at most, or 1.05x
//!     │                     where memory follows the threads and no
//!     │                     other program ran on the program's CPUs),
//!     │                     the threads that gain by it,
//!     │                     as crowd moves judge from Linux's last period,
//!     │                     leave for the nodes it left short (threads
//!     │                     seen spinning, where a node holds 1.1x the mean,
//!     │                     and where some Linux placed sleep or have not
//!     │                     started: as many per node as the round-robin
//!     │                     pin, the awake and the sleepers each, the fewest
//!     │                     away from Linux's); if that probe loses,
//!     │                     they go back to Linux's nodes, except
//!     │                     spinning threads Linux still crowds: every
//!     │                     probe while Linux is champion starts them
//!     │                     spread as the pin again; a spinning program
//!     │                     beside other programs in its scheduling group
//!     │                     (others_by_core): each node's threads dealt to
//!     │                     the cores those use least first, at the start
//!     │                     and again before each probe where that takes
//!     │                     their load off the threads
//!     │
//!     ├─2─ u = objective.utilities(speeds)
//!     │      every thread not fresh: pla.learn(u_i)  (reinforces last period's place)
//!     │
//!     ├─3─ NUMA level (2+ nodes): add each thread's own speed to its tally
//!     │      on numa_tick: aspiration.step(mean speeds) ─► ≤ 1 migration
//!     │        the mover gets a fresh PLA over its new node, current = the
//!     │        least crowded core there
//!     │
//!     └─4─ moves = "crowd": Crowd::moves over the threads' run shares
//!            (crowd.rs): stay, or go where the measurements promise more,
//!            inside the thread's node; on a NUMA tick (across_nodes) also
//!            to a core of another node the program holds, the promise
//!            divided by the remote cost away from the thread's home (where
//!            memory follows, by a passing cost toward a node with fewer of
//!            the program's threads per core, any of its cores if it holds
//!            none there: passing_remote_cost);
//!            where the threads pool their work (Pooling: what each works
//!            follows its run share, over spans of the learner's own
//!            periods; or none sleeps, never seen spinning, beside others
//!            in its own group: none_sleeps), also where the program gains
//!            though the thread loses;
//!            then catch-up trades among those that never sleep and did not
//!            move: furthest behind their siblings' mean run time (summed
//!            over every period, Linux's too) with furthest ahead, while
//!            `catch_up_s` apart and the place ahead is faster by `margin`
//!            (across nodes, more of the two away from their memory only
//!            once a working thread ended, at the remote cost: worker_ended)
//!          moves = "drawn": place_i = fresh ? pla.current() : pla.choose(rng)
//!            (cores only while the guard finds Linux blind: its last
//!            window lost to the learner's by more than `decisive`)
//!            ─► Decision { place, utility = u }
//!
//!   before 2: guard.next(progress) says whose window this is (guard.rs);
//!   after 4 with crowd moves, guard.placed(places): a probe that lost
//!   while no thread moved is not replayed while nothing changes (the
//!   learner tells the guard when threads appear or end, and when the
//!   crowd forgets a loaded core it does not hold, which the next probe
//!   may then try);
//!   in an Os window every thread gets the whole machine and nothing is
//!   learned (its first period puts each thread back on the core Linux had
//!   given it: the hand-back; threads Linux left swapped between two nodes,
//!   each away from its memory, go to their memory's node instead); the
//!   first learner period after one keeps the last places.
//! ```
//!
//! "Fresh" threads (new, just reset, just migrated) take their assigned place
//! without drawing and do not learn from the period's speed, which was
//! measured somewhere else. All randomness comes from one ChaCha8 RNG seeded
//! by the caller and used in key order (aspiration first, then the draws), so
//! the same inputs give the same decisions bit for bit.

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::aspiration::{Aspiration, NumaState, slower_on};
use crate::config::{LearnConfig, Moves, Start};
use crate::crowd::{Crowd, Naps, Occupant, POOLING_MIN_THREADS, Pooling, node_areas, wake_weight};
use crate::guard::{Arm, Guard, GuardStats, HandBack, Signs};
use crate::layout::Layout;
use crate::objective::{Objective, sanitise_speed};
use crate::pla::Pla;
use crate::{Decision, PeriodInput, Policy, ThreadKey, ThreadSample};

/// Weight of the latest period in the moving average of the waiting share
/// (a time constant of 20 periods, a second at the default 50 ms): a
/// program that spins only while it starts (an OpenMP runtime before it
/// sees its threads outnumber the CPUs) stops counting as spinning.
const WAITING_AVERAGE_WEIGHT: f64 = 0.05;

/// Core-level perturbed learning automata plus NUMA-level aspiration
/// learning (PaRLSched).
#[derive(Clone, Debug)]
pub struct LearnPolicy {
    layout: Layout,
    cfg: LearnConfig,
    rng: ChaCha8Rng,
    aspiration: Aspiration,
    /// Every core place, one of each node in turn: the round-robin
    /// sequence ([`Layout::round_robin_cores`]; node by node, 40 threads
    /// started on 2 x 14 cores put 26 on the first node and left Linux,
    /// once it took over, threads away from their memory).
    cores: Vec<usize>,
    /// Per node, the actions of its threads: its core places, then its
    /// node place (unless `node_action` is off).
    node_actions: Vec<Vec<usize>>,
    /// Threads assigned round-robin since the start or the last reset.
    round_robin: u64,
    /// Live threads, sorted by key.
    threads: Vec<LearnThread>,
    /// Chooses, window by window, between the learner's places and the OS.
    guard: Guard,
    /// Linux's placement, put back when its windows start.
    hand_back: HandBack,
    /// The last period was the OS's: its speeds say nothing about the
    /// learner's places.
    after_os: bool,
    /// What the threads measured of each core (`moves = "crowd"`).
    crowd: Crowd,
    /// Whether the threads pool their work, from their run shares and the
    /// CPU time each works (`moves = "crowd"`).
    pooling: Pooling,
    /// Every node's cores: where crowd moves may take a thread.
    node_cores: Vec<Vec<usize>>,
    /// The learner has placed threads at least once.
    started: bool,
    /// The learner's probe in progress started with threads off the nodes
    /// Linux crowded ([`LearnPolicy::leave_crowded_nodes`]): if it loses,
    /// they go back.
    leaving_on_trial: bool,
    /// How the probes' starts did against Linux while it is champion
    /// ([`LearnPolicy::better_start`]).
    start_trials: StartTrials,
    /// Moving average of the program's waiting share (the share of its
    /// sampled CPU time in waiting code), [`WAITING_AVERAGE_WEIGHT`] a period.
    waiting_avg: Option<f64>,
    /// Whether `waiting_avg` ever reached [`CROSS_MAX_WAITING`]: a program
    /// that spins at times (its run shares do not tell crowding then).
    seen_waiting: bool,
    /// When the crowd forgets the load of a core the threads do not hold
    /// (crowd moves): the guard's wait for a new placement ends then.
    forgets_at: Option<f64>,
    /// A thread that was awake ended while others still run: the threads
    /// have work of their own, and the run ends with the last of them
    /// (catch-up trades may then cross nodes: [`LearnPolicy::catch_up_trades`]).
    worker_ended: bool,
    /// When the last period ended: how long the one ending now lasted.
    last_time_s: Option<f64>,
}

/// Where a probe's threads start, node by node
/// ([`LearnPolicy::start_where_linux_was`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StartNodes {
    /// On the node Linux has each on.
    Linux,
    /// Off the nodes Linux crowded, where the crowd's measurements say
    /// they gain by it ([`LearnPolicy::leave_crowded_nodes`]).
    LeaveCrowded,
    /// As many on each node as the round-robin pin puts there, the fewest
    /// moved from Linux's ([`LearnPolicy::spread_as_the_pin`]).
    Pin,
}

/// How the two starts of a probe did against Linux while it is champion:
/// Linux's threads per node, and any other count (recorded as `Pin`).
/// Forgotten once the learner leads.
#[derive(Clone, Copy, Debug, Default)]
struct StartTrials {
    /// The counts the last probe started from.
    last: Option<StartNodes>,
    /// The guard's count of compared probes already accounted for (at
    /// the last start or the last record): a larger count is a comparison
    /// of a probe made since.
    seen: u64,
    /// Each count's score over Linux's level in its last probe compared.
    linux: Option<f64>,
    pin: Option<f64>,
}

impl StartTrials {
    fn started(&mut self, counts: StartNodes, compared: u64) {
        self.last = Some(counts);
        self.seen = compared;
    }

    /// Records the guard's comparison of the last probe, if it made one
    /// since: the probe's score over Linux's level.
    fn compared(&mut self, (compared, ratio): (u64, f64)) {
        if compared > self.seen {
            match self.last {
                Some(StartNodes::Linux) => self.linux = Some(ratio),
                Some(_) => self.pin = Some(ratio),
                None => {}
            }
            self.seen = compared;
        }
    }
}

#[derive(Clone, Debug)]
struct LearnThread {
    key: ThreadKey,
    pla: Pla,
    numa: NumaState,
    /// Sum and count of the thread's known own speeds since the last NUMA
    /// tick.
    numa_speed_sum: f64,
    numa_speed_count: u32,
    /// Takes `pla.current()` this period without drawing, and does not learn
    /// from this period's speed.
    fresh: bool,
    /// The periods it was hardly runnable (crowd moves: a sleeper holds no core).
    naps: Naps,
    /// When it last left its node for another by a crowd move: it does
    /// not cross again for [`CROSS_AGAIN_AFTER_S`].
    crossed_at: Option<f64>,
    /// `numa.home` is where its memory is, as far as the learner can tell:
    /// the node of the core it was first seen on (`locate`), else the node
    /// Linux had it on when the learner started, or the learner's own place
    /// for a thread born in the learner's window.
    home_known: bool,
    /// Born where Linux placed it: the next period's input says where it
    /// runs ([`Policy::wants_cores`]), the node of its first touch.
    locate: bool,
    /// CPU-seconds it ran more than the mean of its siblings that never
    /// sleep, summed over the periods it was one of them (negative: behind);
    /// catch-up trades even it out ([`LearnPolicy::catch_up_trades`]).
    lead_s: f64,
}

impl LearnPolicy {
    /// A learner over `layout`'s places. `cfg` should have passed
    /// [`LearnConfig::validate`]; out-of-range values are not rejected here
    /// but can only make learning useless, never panic.
    pub fn new(layout: Layout, cfg: LearnConfig, seed: u64) -> Self {
        let cores = layout.round_robin_cores();
        let node_actions = (0..layout.nodes())
            .map(|node| {
                let whole_node = cfg.node_action.then(|| layout.node_place(node));
                layout.cores_of(node).chain(whole_node).collect()
            })
            .collect();
        let node_cores = node_areas(&layout);
        LearnPolicy {
            aspiration: Aspiration::new(cfg.numa, layout.nodes()),
            layout,
            cfg,
            rng: ChaCha8Rng::seed_from_u64(seed),
            cores,
            node_actions,
            round_robin: 0,
            threads: Vec::new(),
            guard: Guard::new(cfg.guard),
            hand_back: HandBack::default(),
            after_os: false,
            crowd: Crowd::default(),
            pooling: Pooling::default(),
            node_cores,
            started: false,
            leaving_on_trial: false,
            start_trials: StartTrials::default(),
            waiting_avg: None,
            seen_waiting: false,
            forgets_at: None,
            worker_ended: false,
            last_time_s: None,
        }
    }

    /// The same learner assuming a thread runs `cost` times slower away
    /// from the node it first ran on (its memory): the NUMA level's better
    /// replies weigh that in (`[learn.numa] mind_memory`, aspiration.rs).
    pub fn assuming_remote_cost(mut self, cost: f64) -> Self {
        self.aspiration = self.aspiration.with_remote_cost(cost);
        self
    }

    /// The same learner assuming the kernel brings a thread's memory after
    /// it once it has worked `seconds` on another node
    /// ([`Aspiration::with_memory_follows`]); `None`: memory stays.
    pub fn assuming_memory_follows(mut self, seconds: Option<f64>) -> Self {
        self.aspiration = self.aspiration.with_memory_follows(seconds);
        self
    }

    /// The guard's view: which arm is champion and how the periods went.
    pub fn guard(&self) -> &Guard {
        &self.guard
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn config(&self) -> &LearnConfig {
        &self.cfg
    }

    /// The live threads, in key order.
    pub fn keys(&self) -> impl Iterator<Item = ThreadKey> + '_ {
        self.threads.iter().map(|t| t.key)
    }

    /// The core-level automaton of a live thread (its actions, strategy,
    /// running average and current place).
    pub fn pla(&self, key: ThreadKey) -> Option<&Pla> {
        self.thread(key).map(|t| &t.pla)
    }

    /// The NUMA-level state of a live thread (its node and aspiration
    /// levels).
    pub fn numa_state(&self, key: ThreadKey) -> Option<&NumaState> {
        self.thread(key).map(|t| &t.numa)
    }

    fn thread(&self, key: ThreadKey) -> Option<&LearnThread> {
        self.threads
            .binary_search_by_key(&key, |t| t.key)
            .ok()
            .map(|i| &self.threads[i])
    }

    /// The next thread in round-robin order: its core, node, and a fresh
    /// automaton over the node's actions starting on that core.
    fn assign_round_robin(&mut self, key: ThreadKey) -> LearnThread {
        let born_placed = self.started && (self.guard.arm() == Arm::Learn || !self.cfg.guard.enabled);
        let core = self.cores[(self.round_robin % self.cores.len() as u64) as usize];
        self.round_robin += 1;
        let node = self.node_of_core(core);
        LearnThread {
            key,
            pla: self.fresh_pla(node, core),
            numa: NumaState::new(node),
            numa_speed_sum: 0.0,
            numa_speed_count: 0,
            fresh: true,
            naps: Naps::default(),
            crossed_at: None,
            // Born since the last period: it first ran under that period's
            // arm; under Linux's, where it runs now says where its memory is.
            home_known: born_placed,
            locate: !born_placed,
            lead_s: 0.0,
        }
    }

    fn node_of_core(&self, core: usize) -> usize {
        self.layout.places()[core].node.expect("a core place lies in a node")
    }

    /// A new automaton over `node`'s places, starting on `core` (or on the
    /// node itself with `start = "os"`).
    fn fresh_pla(&self, node: usize, core: usize) -> Pla {
        let actions = self.node_actions[node].clone();
        let first = match self.cfg.start {
            Start::RoundRobin => actions
                .iter()
                .position(|&place| place == core)
                .expect("the core is one of its node's places"),
            // The node place is an action unless `node_action` is off,
            // which the configuration refuses with this start.
            Start::Os => actions
                .iter()
                .position(|&place| place == self.layout.node_place(node))
                .unwrap_or(0),
        };
        Pla::new(actions, first, self.cfg.pla)
    }

    /// The core of `node` the fewest threads ran on last period (the first
    /// such core on ties).
    fn least_crowded_core(&self, node: usize) -> usize {
        let mut crowd = vec![0usize; self.layout.places().len()];
        for thread in &self.threads {
            crowd[thread.pla.current()] += 1;
        }
        self.layout
            .cores_of(node)
            .min_by_key(|&core| crowd[core])
            .expect("every node has a core")
    }

    /// Step 1: carries matched threads over, starts new ones, and resets
    /// everyone when a thread ended and `reset_on_exit` is set.
    fn reconcile(&mut self, input: &PeriodInput<'_>) {
        debug_assert!(
            input.threads.windows(2).all(|w| w[0].key < w[1].key),
            "threads must be sorted by key"
        );
        let mut previous = std::mem::take(&mut self.threads).into_iter().peekable();
        let mut ended = false;
        let mut ended_awake = false;
        let mut appeared = false;
        let mut threads = Vec::with_capacity(input.threads.len());
        for sample in input.threads {
            while let Some(gone) = previous.next_if(|t| t.key < sample.key) {
                ended = true;
                ended_awake |= !gone.naps.asleep();
            }
            let thread = match previous.next_if(|t| t.key == sample.key) {
                Some(mut thread) => {
                    thread.naps.record(sample.share.is_none());
                    thread
                }
                None => {
                    appeared = true;
                    self.assign_round_robin(sample.key)
                }
            };
            threads.push(thread);
        }
        for gone in previous {
            ended = true;
            ended_awake |= !gone.naps.asleep();
        }
        self.threads = threads;
        self.worker_ended |= ended_awake && !self.threads.is_empty();
        if ended || appeared {
            // A new placement for the guard's next probe of the learner.
            self.guard.learner_changed();
        }

        if ended && self.cfg.reset_on_exit {
            self.round_robin = 0;
            for index in 0..self.threads.len() {
                let key = self.threads[index].key;
                // A new start, but the memory stays where it is, and
                // what is known of its sleep.
                let old = &self.threads[index];
                let (home, home_known, locate, naps, lead_s) =
                    (old.numa.home, old.home_known, old.locate, old.naps, old.lead_s);
                self.threads[index] = self.assign_round_robin(key);
                let thread = &mut self.threads[index];
                thread.lead_s = lead_s;
                thread.numa.home = home;
                thread.home_known = home_known;
                thread.locate = locate;
                thread.naps = naps;
            }
        }
    }

    /// The threads spin: the moving average of the waiting share is at
    /// least `guard.blind_waiting`. Run shares do not tell crowding then.
    fn spinning(&self) -> bool {
        self.waiting_avg.is_some_and(|w| w >= self.cfg.guard.blind_waiting)
    }

    /// Crowd moves are best responses of the `own` game (each thread its
    /// own share); a shared objective (`mean`, `balanced`) needs the
    /// automata's draws, whatever `moves` says. So do threads that spin in
    /// waiting code: a sibling spinning on a thread's core takes its share
    /// like any other load, yet moving it away is what makes the program
    /// progress, which the shares cannot predict (measured: two OpenMP
    /// threads moved back to one CPU beside each other).
    fn crowd_moves_on(&self) -> bool {
        self.cfg.moves == Moves::Crowd && self.cfg.objective == Objective::Own && !self.spinning()
    }

    /// With crowd moves configured, a program seen spinning holds its
    /// places instead (its round-robin start, the fixed pin the guard then
    /// compares with Linux): run shares do not tell crowding there, and the
    /// automata's draws were measured to drift from that start towards
    /// Linux's placement (a thread beside another program's load measures
    /// itself faster on the free CPU, crowded with its siblings, while the
    /// program slows: docs/bench.md, "aco-spin beside the load"). With
    /// more threads than cores, too: drawing there put all four threads of
    /// `aco --sync spin-then-block` on one CPU in one 50 ms period of three
    /// (docs/results.md, "Spinning programs hold their places").
    fn holds_places(&self) -> bool {
        self.cfg.moves == Moves::Crowd && self.cfg.objective == Objective::Own && self.spinning()
    }

    /// The learner's first period (after Linux's windows, under the
    /// guard): every thread Linux placed starts on the node Linux had it
    /// on, so that it stays beside the memory it touched there, on that
    /// node's cores round-robin (in key order among the threads Linux put
    /// there); the others keep their round-robin start. On one node this is
    /// the round-robin start. Where Linux crowded a node, the threads the
    /// crowd's measurements say gain by it leave for the nodes it left
    /// short ([`LearnPolicy::leave_crowded_nodes`]); their memory stays
    /// where Linux had them (their NUMA home).
    fn start_where_linux_was(&mut self, input: &PeriodInput<'_>, start: StartNodes) {
        let (linux_node, start_node) = self.start_nodes(input, start);
        self.start_on(input, &linux_node, start_node);
    }

    /// Starts every thread Linux placed on the node `start_node` gives it
    /// (`linux_node`: where Linux had it), as
    /// [`LearnPolicy::start_where_linux_was`] describes.
    fn start_on(&mut self, input: &PeriodInput<'_>, linux_node: &[Option<usize>], start_node: Vec<Option<usize>>) {
        self.leaving_on_trial = start_node != linux_node;
        let counts = if self.per_node(&start_node) == self.per_node(linux_node) {
            StartNodes::Linux
        } else {
            StartNodes::Pin
        };
        self.start_trials
            .started(counts, self.guard.learner_probes_compared().0);
        // Its memory is where it was first seen, where that is known; a
        // thread that has not started its work touches it where it starts.
        let home_of = |thread: &LearnThread, linux: usize, node: usize| {
            if thread.naps.not_started() {
                node
            } else if thread.home_known {
                thread.numa.home
            } else {
                linux
            }
        };
        // Where no other program runs on the program's CPUs, the threads
        // that would start away from their memory trade nodes with threads
        // away on theirs (each node keeps its count): a probe is scored
        // before any memory has followed (40 of the learner's own periods
        // on a node), and where memory does not follow at all, for good.
        // Beside another program's load, which threads the crowd sends off
        // a loaded node matters more (sim, 4x8 `barrier` D, traded there
        // too: 69.9 -> 92.6 s).
        let mut start_node = start_node;
        if alone_on_its_cpus(input) {
            let homes: Vec<Option<usize>> = self
                .threads
                .iter()
                .zip(linux_node.iter().zip(&start_node))
                .map(|(thread, (&linux, &node))| Some(home_of(thread, linux?, node?)))
                .collect();
            let asleep: Vec<bool> = self.threads.iter().map(|thread| thread.naps.asleep()).collect();
            swap_toward_homes(&mut start_node, &homes, &asleep);
        }
        let dealt = self.cores_dealt(input);
        let mut on_node = vec![0usize; self.layout.nodes()];
        for index in self.dealing_order(input) {
            let (Some(linux), Some(node)) = (linux_node[index], start_node[index]) else {
                continue;
            };
            let home = home_of(&self.threads[index], linux, node);
            let cores = &dealt[node];
            let core = cores[on_node[node] % cores.len()];
            on_node[node] += 1;
            let pla = self.fresh_pla(node, core);
            let thread = &mut self.threads[index];
            thread.pla = pla;
            thread.numa = NumaState {
                home,
                ..NumaState::new(node)
            };
            thread.home_known = true;
            thread.fresh = true;
        }
    }

    /// The node Linux has each thread on, and the one `start` puts it on.
    fn start_nodes(&mut self, input: &PeriodInput<'_>, start: StartNodes) -> (Vec<Option<usize>>, Vec<Option<usize>>) {
        let linux_core = self.linux_cores();
        let linux_node = self.nodes_of(&linux_core);
        let start_node = match start {
            StartNodes::Linux => linux_node.clone(),
            StartNodes::LeaveCrowded => self.leave_crowded_nodes(input, &linux_core, &linux_node),
            StartNodes::Pin => self.spread_as_the_pin(&linux_node, &vec![true; linux_node.len()]),
        };
        (linux_node, start_node)
    }

    /// The node each thread is on in the learner's placement.
    fn held_nodes(&self) -> Vec<Option<usize>> {
        self.threads.iter().map(|thread| Some(thread.numa.node)).collect()
    }

    /// Threads per node of the machine.
    fn per_node(&self, node: &[Option<usize>]) -> Vec<usize> {
        threads_per_node(node.iter().copied(), self.layout.nodes())
    }

    /// The learner's first period after a window of Linux's: where the
    /// learner's first probe took threads off the nodes Linux crowded, it
    /// is over now; had it lost, Linux would still be champion, and the
    /// threads go back to the nodes Linux had them on. A spinning program
    /// Linux still leaves crowded starts spread as the pin again instead,
    /// at every probe while Linux is champion: a spread that lost while
    /// another program's load sat on one of the nodes may win once it has
    /// left, and Linux, blind to the crowding, keeps it (sim, 8x32
    /// `barrier-spin` D: held on Linux's seven nodes after a lost first
    /// probe, the eighth empty for the rest of the run, 1.60 times the
    /// pin's time). A program whose threads never wait
    /// ([`LearnPolicy::never_waits`]) and whose crowd does not pool its
    /// work starts every probe while Linux is champion where Linux has the
    /// threads now, as its first: each thread does its own work, so
    /// Linux's balancing after the load moved is a better start than the
    /// learner's last placement, which the load may have left behind
    /// (sim, 8x32 `independent` D, the load in its own session: probes
    /// from the held placement left node 0 empty and lost, 0.965 -> 0.933
    /// of Linux's time). Threads that wait for each other keep the
    /// learner's placement: starting there from Linux's cost the barrier
    /// programs' D cells up to 15% (docs/simulator.md, "Threads that never
    /// sleep pool from the start"); but where a probe from Linux's threads
    /// per node or from another count lost, the next starts from the
    /// better of the two ([`LearnPolicy::better_start`]), and a first probe
    /// off the nodes Linux crowded that lost goes back to Linux's counts
    /// unless they did worse.
    fn after_linux_window(&mut self, input: &PeriodInput<'_>) {
        let on_trial = std::mem::take(&mut self.leaving_on_trial);
        if self.guard.champion() != Arm::Os {
            self.start_trials = StartTrials::default();
            return;
        }
        self.start_trials.compared(self.guard.learner_probes_compared());
        if alone_on_its_cpus(input) && self.spinning() && self.crowded_for_spinning(&self.nodes_of(&self.linux_cores()))
        {
            if on_trial {
                // Spread already: held so, still on trial.
                self.leaving_on_trial = true;
            } else {
                let held = self.held_nodes();
                if self.crowded_for_spinning(&held) {
                    self.start_where_linux_was(input, StartNodes::LeaveCrowded);
                }
            }
        } else if !self.holds_places() && (self.pools(input) || !self.never_waits(input)) {
            if let Some(start) = self.better_start(on_trial) {
                // The learner's threads per node already: nothing else to
                // try (a fresh start would only undo its moves in the
                // nodes).
                let (linux_node, start_node) = self.start_nodes(input, start);
                if on_trial || self.per_node(&start_node) != self.per_node(&self.held_nodes()) {
                    self.start_on(input, &linux_node, start_node);
                }
            }
        } else if on_trial {
            self.start_where_linux_was(input, StartNodes::Linux);
        } else if self.holds_places() {
            self.deal_held_places_around_others(input);
        } else {
            self.start_where_linux_was(input, StartNodes::LeaveCrowded);
        }
    }

    /// Where the next probe of threads that keep the learner's placement
    /// between probes starts, Linux champion (`None`: where the last one
    /// left them). A probe starts from Linux's threads per node or from
    /// another count (the round-robin pin's, or, the first probe, off the
    /// nodes Linux crowded); once one of them lost by more than the
    /// guard's `margin`, the other is tried (a first probe off the crowded
    /// nodes that lost at all: Linux's), and from then on the one that did
    /// better against Linux in its last probe. A start that lost once may still be the better of the two:
    /// sim, 4x8 `barrier` D, the load on one node: a first probe with the
    /// pin's counts lost narrowly in the program's start-up, the probes
    /// from Linux's counts, which left that node empty, by 8%, and were
    /// held for 20 s (72.9 s, where runs whose first probe won took 67.3).
    fn better_start(&self, on_trial: bool) -> Option<StartNodes> {
        let trials = &self.start_trials;
        let Some(held) = trials.last else {
            return on_trial.then_some(StartNodes::Linux);
        };
        // Linux's counts with other threads on the nodes: back to Linux's
        // own, beside their memory.
        if on_trial && held == StartNodes::Linux {
            return Some(StartNodes::Linux);
        }
        let (other, held_did, other_did) = match held {
            StartNodes::Linux => (StartNodes::Pin, trials.linux, trials.pin),
            _ => (StartNodes::Linux, trials.pin, trials.linux),
        };
        match (held_did, other_did) {
            (_, None) if on_trial => Some(other),
            // A tie is no loss: a probe that tried the other start after
            // one cost 2x14 `barrier` D, the load in the program's session,
            // 13% (the pin's counts lost by a third there, and Linux, its
            // budget spent, held the threads for 19 s).
            (Some(held_did), None) if held_did < 1.0 - self.cfg.guard.margin => Some(other),
            (Some(held_did), Some(other_did)) if other_did > held_did => Some(other),
            _ => None,
        }
    }

    /// Whether the learner deals a spinning program's threads around the
    /// other programs' load ([`LearnPolicy::cores_dealt`]): where they run
    /// on some of its CPUs in its own scheduling group (no
    /// [`PeriodInput::wake_slice_s`]), so that a core they use gives the
    /// program's threads what they leave. Where they run in a group apart,
    /// Linux gives a loaded core to the program's group at half at least,
    /// and more to threads that wake often: the pin's round-robin places
    /// stay (sim, 2x14, `barrier-spin` C.2 with the load in its own
    /// session: dealt so, 0.651 -> 0.679 of Linux's time).
    fn deals_around_others(&self, input: &PeriodInput<'_>) -> bool {
        self.holds_places() && input.wake_slice_s.is_none() && !alone_on_its_cpus(input)
    }

    /// The threads in the order the learner deals them cores: key order;
    /// where it deals around the other programs' load, the awake threads
    /// first, so that one asleep (a main thread waiting in `join`) does not
    /// take a core the others leave free.
    fn dealing_order(&self, input: &PeriodInput<'_>) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.threads.len()).collect();
        if self.deals_around_others(input) && input.others_by_core.is_some() {
            order.sort_by_key(|&index| self.threads[index].naps.asleep());
        }
        order
    }

    /// Every node's cores in the order the learner deals threads to them
    /// (the k-th thread started on a node takes the k-th, cycling): where
    /// other programs ran on some of the program's CPUs, the cores they
    /// used least first, so that threads doubled up on a core (more threads
    /// than cores) share one the others leave free, and a node with fewer
    /// threads than cores leaves the loaded ones empty; otherwise, and
    /// among cores alike, in place order (the round-robin start). A core's
    /// share counts in tenths, and one at most [`ALONE_OTHERS_AT_MOST`] as
    /// none, so that noise does not reorder them.
    fn cores_dealt(&self, input: &PeriodInput<'_>) -> Vec<Vec<usize>> {
        let mut dealt = self.node_cores.clone();
        if let (true, Some(by_core)) = (self.deals_around_others(input), input.others_by_core) {
            let tenths = |core: usize| {
                by_core
                    .get(core)
                    .copied()
                    .flatten()
                    .filter(|&share| share > ALONE_OTHERS_AT_MOST)
                    .map_or(0, |share| (share.min(1.0) * 10.0).round() as u32)
            };
            for cores in &mut dealt {
                cores.sort_by_key(|&core| tenths(core));
            }
        }
        dealt
    }

    /// A program that holds its places (it spins at its barriers), beside
    /// another program's load: before each of the learner's probes, the
    /// threads of every node are dealt again over its cores as
    /// [`LearnPolicy::cores_dealt`] orders them, where that puts fewer
    /// threads on the cores the others use (their shares summed over the
    /// threads, by more than half a core's). The held places were dealt
    /// before the load came, or where it was before it moved: the
    /// round-robin pin doubles threads up on the first cores of a node,
    /// loaded or not (sim, 2x14, `barrier-spin` C.3 in the program's
    /// session, the load on half of each node's cores from 20 s: the pin
    /// 1.26x Linux, `best-static`, doubling up on the free cores, 0.69x).
    /// Nodes stay as they are: the threads' memory is there.
    fn deal_held_places_around_others(&mut self, input: &PeriodInput<'_>) {
        let Some(by_core) = input.others_by_core.filter(|_| self.deals_around_others(input)) else {
            return;
        };
        let share = |core: usize| by_core.get(core).copied().flatten().unwrap_or(0.0);
        let dealt = self.cores_dealt(input);
        let mut on_node = vec![0usize; self.layout.nodes()];
        let mut place: Vec<usize> = self.threads.iter().map(|thread| thread.pla.first()).collect();
        let (mut held_cost, mut dealt_cost) = (0.0, 0.0);
        for index in self.dealing_order(input) {
            let (node, held) = (self.threads[index].numa.node, place[index]);
            if self.layout.is_core(held) && self.node_of_core(held) == node {
                let cores = &dealt[node];
                let core = cores[on_node[node] % cores.len()];
                on_node[node] += 1;
                if !self.threads[index].naps.asleep() {
                    held_cost += share(held);
                    dealt_cost += share(core);
                }
                place[index] = core;
            }
        }
        if dealt_cost >= held_cost - DEALT_GAIN_AT_LEAST {
            return;
        }
        for (index, core) in place.into_iter().enumerate() {
            if core != self.threads[index].pla.first() {
                let pla = self.fresh_pla(self.threads[index].numa.node, core);
                let thread = &mut self.threads[index];
                thread.pla = pla;
                thread.fresh = true;
            }
        }
        self.guard.learner_changed();
    }

    /// The core each thread ran on at the end of Linux's last window as
    /// champion (the hand-back's), where it is a core.
    fn linux_cores(&self) -> Vec<Option<usize>> {
        self.threads
            .iter()
            .map(|thread| {
                self.hand_back
                    .core_of(thread.key)
                    .filter(|&core| self.layout.is_core(core))
            })
            .collect()
    }

    /// Whether the threads on nodes `node` (each thread's, where known)
    /// leave a node crowded for a spinning program ([`SPIN_CROWDED_FACTOR`]).
    fn crowded_for_spinning(&self, node: &[Option<usize>]) -> bool {
        let cores: Vec<usize> = self.node_cores.iter().map(Vec::len).collect();
        crowded_nodes(node, &vec![true; node.len()], &cores, SPIN_CROWDED_FACTOR).is_some()
    }

    /// The hand-back puts a thread on the core Linux last had it on. Where
    /// that left threads swapped between two nodes, each away from its
    /// memory (known to the learner) on the other's, they go to their
    /// memory's node instead, any of its cores: as many threads per node as
    /// Linux had, beside their memory. Linux's placement at the end of a
    /// window can be caught mid rebalancing with such a swap; the nodes are
    /// balanced, and the modelled Linux, as the kernel without NUMA
    /// balancing, does not see memory, so it kept the swap, and the
    /// hand-back restored it after every learner window (sim, 2x14,
    /// `barrier` B.3: 2 of 40 threads away from their memory in every Linux
    /// window, 7% less work done than Linux alone). A thread away without a
    /// partner stays where Linux put it: Linux moved it for the load
    /// (sending all of them home cost 9% in 8x32 `barrier-spin` D, where
    /// the load moves between nodes).
    fn hand_back_beside_memory(&self, place: &mut [usize]) {
        // Threads away from their memory, by (node they are on, home).
        let mut away: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
        for (index, (&at, thread)) in place.iter().zip(&self.threads).enumerate() {
            if thread.home_known && self.layout.is_core(at) {
                let on = self.node_of_core(at);
                if on != thread.numa.home {
                    away.entry((on, thread.numa.home)).or_default().push(index);
                }
            }
        }
        for (&(on, home), there) in &away {
            if on > home {
                continue;
            }
            let back = away.get(&(home, on)).map_or(&[][..], Vec::as_slice);
            let pairs = there.len().min(back.len());
            for &index in there[..pairs].iter().chain(&back[..pairs]) {
                place[index] = self.layout.node_place(self.threads[index].numa.home);
            }
        }
    }

    /// Threads born where Linux placed them: the node of the core `input`
    /// says each runs on is where it first touched its memory (asked for
    /// once, [`Policy::wants_cores`]; a thread the target cannot locate keeps
    /// the node Linux has it on when the learner starts).
    fn locate_new_threads(&mut self, input: &PeriodInput<'_>) {
        let Some(cores) = input.cores else {
            return;
        };
        let nodes = self.nodes_of(cores);
        for (thread, node) in self.threads.iter_mut().zip(nodes) {
            if std::mem::take(&mut thread.locate)
                && let Some(node) = node
            {
                thread.numa.home = node;
                thread.home_known = true;
            }
        }
    }

    /// The node of each core place (`None`, or a place that is no core,
    /// gives `None`).
    fn nodes_of(&self, cores: &[Option<usize>]) -> Vec<Option<usize>> {
        cores
            .iter()
            .map(|core| core.filter(|&c| self.layout.is_core(c)).map(|c| self.node_of_core(c)))
            .collect()
    }

    /// The node each thread starts on after Linux's windows (`None` where
    /// Linux did not place it): Linux's, unless Linux left a node crowded
    /// ([`crowded_nodes`]). Then the run shares measured in Linux's last
    /// period, on the cores Linux had the threads on, decide as crowd
    /// moves do ([`Crowd::moves`]) which threads of a crowded node gain by
    /// going to a core of a node Linux left short, a core the program does
    /// not hold there counting as loaded like the node's held ones; where
    /// some of the threads sleep (no share to judge), as the round-robin
    /// pin spreads them ([`LearnPolicy::spread_as_the_pin`]); so do
    /// threads that wait for each other beside other programs' load in a
    /// scheduling group apart that is spread over every node
    /// ([`LearnPolicy::others_even_over_nodes`]), where Linux's counts
    /// are off the pin's by [`ALONE_CROWDED_NODE_FACTOR`].
    fn leave_crowded_nodes(
        &mut self,
        input: &PeriodInput<'_>,
        linux_core: &[Option<usize>],
        linux_node: &[Option<usize>],
    ) -> Vec<Option<usize>> {
        if self.cfg.moves != Moves::Crowd {
            return linux_node.to_vec();
        }
        let awake: Vec<bool> = self.threads.iter().map(|thread| !thread.naps.asleep()).collect();
        let cores: Vec<usize> = self.node_cores.iter().map(Vec::len).collect();
        // Spinning threads' run shares do not tell crowding (crowd.rs), and
        // Linux is blind to it.
        if self.spinning() {
            return match crowded_nodes(linux_node, &awake, &cores, SPIN_CROWDED_FACTOR) {
                Some(_) => self.spread_as_the_pin(linux_node, &vec![true; linux_node.len()]),
                None => linux_node.to_vec(),
            };
        }
        // Beside other programs' load in a scheduling group apart, spread
        // over every node, Linux's node counts answer that load; but the
        // group's share of a loaded core does not shrink with the threads
        // on it, and threads that wait for each other are gated by the
        // most crowded core: they start on as many threads per node as the
        // round-robin pin puts there, the fewest moved (sim, 4x8 `barrier`
        // A.2: Linux's 11, 11, 9 and 9 threads where the pin has 12, 12, 8
        // and 8 left cores with 5 threads beside ones with 3, and the
        // learner needed about 22 s to even them out: 71.5 -> 66.8 s, the
        // pin 66.0). Not where the load sits on some nodes only (D): there
        // Linux's counts are the better start.
        if input.wake_slice_s.is_some()
            && !alone_on_its_cpus(input)
            && !self.never_waits(input)
            && self.others_even_over_nodes(input)
        {
            let all = vec![true; linux_node.len()];
            if crowded_nodes(linux_node, &all, &cores, ALONE_CROWDED_NODE_FACTOR).is_some() {
                return self.spread_as_the_pin(linux_node, &all);
            }
        }
        let factor = if alone_on_its_cpus(input) && self.aspiration.memory_follows_s().is_some() {
            ALONE_CROWDED_NODE_FACTOR
        } else {
            CROWDED_NODE_FACTOR
        };
        let Some(crowded) = crowded_nodes(linux_node, &awake, &cores, factor) else {
            return linux_node.to_vec();
        };
        // Threads asleep in Linux's window (a pipeline's later stages
        // before the first items reach them) have no share for the crowd to
        // judge, yet will work where they start: as many on each node as
        // the round-robin pin puts there. A thread that has not started
        // (hardly runnable in every period since it was first seen) is one,
        // where Linux's first window was too short to tell a sleeper by its
        // naps; it counts for the crowding, since it will work.
        let working: Vec<bool> = awake
            .iter()
            .zip(&self.threads)
            .map(|(&awake, thread)| awake && !thread.naps.not_started())
            .collect();
        if working.contains(&false) {
            return self.spread_as_the_pin(linux_node, &working);
        }
        // The threads of a crowded node may go to its cores or to those of
        // the nodes it left short (the last area); the others stay in
        // their node.
        let escape = self.node_cores.len();
        let mut areas = self.node_cores.clone();
        areas.push(
            (0..escape)
                .filter(|&node| crowded[node] != NodeCrowd::Even)
                .flat_map(|node| self.node_cores[node].iter().copied())
                .collect(),
        );
        let occupants: Vec<Occupant> = linux_core
            .iter()
            .zip(linux_node)
            .zip(input.threads)
            .zip(&awake)
            .map(|(((core, node), sample), &awake)| Occupant {
                place: core.unwrap_or(self.layout.whole()),
                share: sample.share.filter(|_| core.is_some()),
                area: match node {
                    Some(node) if crowded[*node] == NodeCrowd::Crowded => escape,
                    Some(node) => *node,
                    None => escape,
                },
                asleep: !awake,
                wakes: wake_weight(sample.grain_s, input.wake_slice_s),
            })
            .collect();
        self.crowd
            .assume_area_means(&self.layout, &self.node_cores, &occupants, input.time_s);
        self.crowd.pooled = self.pools(input);
        let placed = self
            .crowd
            .moves(&self.layout, &self.cfg.crowd, &areas, &occupants, input.time_s);
        placed
            .iter()
            .zip(linux_core)
            .map(|(&place, core)| core.map(|_| self.node_of_core(place)))
            .collect()
    }

    /// Whether the other programs' load is spread over every node: their
    /// mean share of a node's cores, on the node with the least of it, is
    /// at least [`OTHERS_SPREAD_AT_LEAST`] of that on the node with the
    /// most (`false` where the target does not tell each core's share).
    fn others_even_over_nodes(&self, input: &PeriodInput<'_>) -> bool {
        let Some(by_core) = input.others_by_core else {
            return false;
        };
        let mut means = Vec::new();
        for cores in &self.node_cores {
            let shares: Vec<f64> = cores
                .iter()
                .filter_map(|&core| by_core.get(core).copied().flatten())
                .collect();
            if shares.is_empty() {
                return false;
            }
            means.push(shares.iter().sum::<f64>() / shares.len() as f64);
        }
        let (lo, hi) = means
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &m| (lo.min(m), hi.max(m)));
        hi > 0.0 && lo >= hi * OTHERS_SPREAD_AT_LEAST
    }

    /// The node each thread Linux placed (`linux_node`) starts on where a
    /// spinning program was left crowded, or some of the threads sleep
    /// (`awake` false): as many on each node as the round-robin pin puts
    /// there, the fewest of them away from the node Linux had them on
    /// (their memory; in key order, the first stay). The awake threads are
    /// spread so over the pin's first cores, then the sleepers over its
    /// next ones, so that once the sleepers wake each node holds the pin's
    /// share of both (spreading all at once, the awake in key order first,
    /// left every awake thread of a pipeline's first stage on Linux's
    /// crowded node and lost its probe: sim, 2x14, `pipeline` D).
    fn spread_as_the_pin(&self, linux_node: &[Option<usize>], awake: &[bool]) -> Vec<Option<usize>> {
        let mut start: Vec<Option<usize>> = vec![None; linux_node.len()];
        let mut pin = self.cores.iter().cycle();
        for group in [true, false] {
            let members: Vec<usize> = (0..linux_node.len())
                .filter(|&index| linux_node[index].is_some() && awake[index] == group)
                .collect();
            let mut room = vec![0usize; self.layout.nodes()];
            for &core in pin.by_ref().take(members.len()) {
                room[self.node_of_core(core)] += 1;
            }
            for &index in &members {
                if let Some(node) = linux_node[index].filter(|&node| room[node] > 0) {
                    room[node] -= 1;
                    start[index] = Some(node);
                }
            }
            let mut short = room
                .iter()
                .enumerate()
                .flat_map(|(node, &room)| std::iter::repeat_n(node, room));
            for &index in &members {
                if start[index].is_none() {
                    start[index] = short.next();
                }
            }
        }
        start
    }

    /// Step 4 with `moves = "crowd"`: every thread keeps its place unless
    /// the run shares measured there and elsewhere say it gains by moving
    /// ([`Crowd::moves`]). Nothing measured in the OS's window counts: it
    /// was not on the learner's places.
    fn crowd_moves(&mut self, input: &PeriodInput<'_>, after_os: bool) -> Vec<usize> {
        if after_os {
            self.pooling.interrupt();
        } else {
            let measured: Vec<(ThreadKey, Option<f64>, f64)> = self
                .threads
                .iter()
                .zip(input.threads)
                .filter(|(thread, _)| !thread.fresh && !thread.naps.asleep())
                .filter_map(|(_, sample)| Some((sample.key, crate::crowd::usable(sample.share), sample.worked?)))
                .collect();
            self.pooling.record(&measured);
            self.crowd.pooled = self.pools(input);
        }
        let occupants: Vec<Occupant> = self
            .threads
            .iter()
            .zip(input.threads)
            .map(|(thread, sample)| Occupant {
                place: thread.pla.current(),
                share: sample.share.filter(|_| !thread.fresh && !after_os),
                area: thread.numa.node,
                asleep: thread.naps.asleep(),
                wakes: wake_weight(sample.grain_s, input.wake_slice_s),
            })
            .collect();
        // On a NUMA tick of the learner's own periods a thread may also go
        // to a core of another node (`[learn.crowd] across_nodes`).
        let across = self.cfg.crowd.across_nodes
            && input.numa_tick
            && !after_os
            && self.layout.nodes() > 1
            && self.cfg.numa_level
            && self.waiting_avg.is_none_or(|w| w < CROSS_MAX_WAITING);
        let place = if across {
            self.moves_across_nodes(input, occupants)
        } else {
            self.crowd.moves(
                &self.layout,
                &self.cfg.crowd,
                &self.node_cores,
                &occupants,
                input.time_s,
            )
        };
        let place = if after_os {
            place
        } else {
            self.catch_up_trades(input, place)
        };
        for (index, &to) in place.iter().enumerate() {
            let node = self.node_of_core(to);
            if node != self.threads[index].numa.node {
                // Another node: a fresh automaton there, as after the NUMA
                // level's migrations; its memory stays home.
                let pla = self.fresh_pla(node, to);
                let thread = &mut self.threads[index];
                thread.numa.node = node;
                thread.pla = pla;
                thread.fresh = true;
                thread.crossed_at = Some(input.time_s);
                continue;
            }
            let thread = &mut self.threads[index];
            thread.fresh = false;
            let taken = thread.pla.take(to);
            debug_assert!(taken, "a move inside the node is one of its automaton's places");
        }
        place
    }

    /// Whether the crowd moves threads where the program gains
    /// (`Crowd::pooled`): `pooled_moves` on, and the threads pool their
    /// work as [`Pooling`] measured it, or none of them sleeps
    /// ([`LearnPolicy::none_sleeps`]).
    fn pools(&self, input: &PeriodInput<'_>) -> bool {
        self.cfg.crowd.pooled_moves && (self.pooling.pooled() || self.none_sleeps(input))
    }

    /// Every awake thread measured this period runs without sleeping (no
    /// grain; at least [`POOLING_MIN_THREADS`] of them) and the program was
    /// never seen spinning (its waiting share's
    /// average always below [`CROSS_MAX_WAITING`], where the target tells
    /// waiting code: `PeriodInput::waiting`): threads that wait neither at
    /// barriers nor for queues nor in spin loops do not wait for each
    /// other, so each does its own work or draws from a shared pool, and
    /// what the program gets counts. [`Pooling`] needs two spans of the
    /// learner's own periods to say so, which the guard's short probes
    /// never give: beside a load in the program's scheduling group the
    /// crowd then kept one thread to a loaded core, each thread's best,
    /// where three to a loaded core give the program more (sim, 2x14
    /// program's session `independent` D: Linux and the learner's probes
    /// 13.3 CPUs, the round-robin pin 15, the crowd's pooled placement
    /// 16). Only where the other programs share the program's scheduling
    /// group (no `PeriodInput::wake_slice_s`): in a group apart Linux gives
    /// the program's group its share of a loaded core however many of its
    /// threads are there, which the crowd's weights do not model, and
    /// threads crowded there fell behind for good (sim, 4x8 `independent`
    /// D, the load in its own session: 0.823 -> 0.878 of Linux's time).
    /// Unknown waiting counts as spinning: a program spinning at its
    /// barriers never sleeps either (and the first periods of a spinning
    /// program, before the average rose, moved its threads: sim, 2x14
    /// program's session `barrier-spin` C.3, 0.996 -> 1.008 of Linux's
    /// time with `PeriodInput::waiting` only known and the average below
    /// `blind_waiting`).
    fn none_sleeps(&self, input: &PeriodInput<'_>) -> bool {
        input.wake_slice_s.is_none() && self.never_waits(input)
    }

    /// [`LearnPolicy::none_sleeps`] wherever the other programs run: no
    /// awake thread sleeps, at least [`POOLING_MIN_THREADS`] measured, and
    /// the program never seen waiting.
    fn never_waits(&self, input: &PeriodInput<'_>) -> bool {
        let never_waited = !self.seen_waiting && self.waiting_avg.is_some_and(|w| w < CROSS_MAX_WAITING);
        if !never_waited {
            return false;
        }
        let threads = || self.threads.iter().zip(input.threads);
        if threads().any(|(thread, sample)| !thread.naps.asleep() && sample.grain_s.is_some()) {
            return false;
        }
        let measured = threads()
            .filter(|(thread, sample)| Self::never_sleeps(thread, sample).is_some())
            .count();
        measured >= POOLING_MIN_THREADS
    }

    /// What the thread ran over the period (CPU-seconds a second: the time
    /// it worked where the target tells, else its run share), if it counts
    /// for catch-up: measured this period, awake, and never asleep between
    /// rounds (no grain: it is always runnable, so what it ran is what it
    /// progressed); `None` if it does not.
    fn never_sleeps(thread: &LearnThread, sample: &ThreadSample) -> Option<f64> {
        if thread.naps.asleep() || sample.grain_s.is_some() {
            return None;
        }
        crate::crowd::usable(sample.share).map(|share| sample.worked.filter(|w| w.is_finite()).unwrap_or(share))
    }

    /// Adds the period to every never-sleeping thread's lead over its
    /// siblings' mean (in Linux's windows too: what a thread fell behind
    /// there, the learner's windows make up).
    fn record_leads(&mut self, input: &PeriodInput<'_>) {
        let span_s = self.last_time_s.map_or(0.0, |last| (input.time_s - last).max(0.0));
        self.last_time_s = Some(input.time_s);
        if span_s == 0.0 || self.cfg.crowd.catch_up_s == 0.0 {
            return;
        }
        let ran: Vec<Option<f64>> = self
            .threads
            .iter()
            .zip(input.threads)
            .map(|(thread, sample)| Self::never_sleeps(thread, sample))
            .collect();
        let counted: Vec<f64> = ran.iter().flatten().copied().collect();
        if counted.len() < 2 {
            return;
        }
        let mean = counted.iter().sum::<f64>() / counted.len() as f64;
        for (thread, ran) in self.threads.iter_mut().zip(&ran) {
            if let Some(ran) = ran {
                thread.lead_s += (ran - mean) * span_s;
            }
        }
    }

    /// Catch-up trades, after the crowd's moves, where the threads pool
    /// their work: threads that never sleep and did not move trade places,
    /// the one furthest behind with the one furthest ahead, and so on,
    /// while the one ahead has run `catch_up_s` more and its place runs the
    /// one behind `margin` faster. Each core keeps as many of the program's
    /// threads, so the program gets as much CPU as before, but it is shared
    /// out: where each thread has its own work (independent tasks of equal
    /// size), the run ends when the last one does, and the crowd's
    /// placement, which maximises the program's CPU, leaves some threads a
    /// crowded core for good (sim, 2x14 program's session `independent` D:
    /// ten threads alone on free cores ended at 50-55 s, thirty three to a
    /// loaded core at 87-94 s). A trade that takes more of the two away
    /// from their memory's node waits until a thread that was awake has
    /// ended while others still run (`worker_ended`: the threads have work
    /// of their own, and the run ends with the last of them), and the place
    /// ahead must run the one behind faster by `margin` after the whole
    /// remote cost, where memory follows too (such a trade comes near the
    /// run's end, and the threads trade again as their leads change: at the
    /// passing cost, 8x32 `independent` C.2 went 0.833 -> 0.859 of Linux's
    /// time, against 0.831 at the whole cost). Allowed from the start,
    /// such trades cost 2x14 own session `independent` D 6.7%, and in 4x8
    /// `independent` D each thread ran 0.5-3.7 CPU-seconds more for the
    /// memory moved (seed 1: 78.1 -> 81.7 s). Never allowed, threads
    /// whose node the load reached near the end ran at a tenth of a core
    /// there while their siblings, two to a free core, were ahead (4x8
    /// `independent` D, the load on node 3 from 60 s: seeds 3 and 4 took
    /// 88.3 and 83.2 s, 78.7 and 77.3 with the trades).
    fn catch_up_trades(&mut self, input: &PeriodInput<'_>, mut place: Vec<usize>) -> Vec<usize> {
        let gap_s = self.cfg.crowd.catch_up_s;
        if gap_s == 0.0 || !self.crowd.pooled {
            return place;
        }
        let mut still: Vec<(usize, f64)> = self
            .threads
            .iter()
            .zip(input.threads)
            .enumerate()
            .filter(|(index, (thread, _))| !thread.fresh && place[*index] == thread.pla.current())
            .filter_map(|(index, (thread, sample))| Some((index, Self::never_sleeps(thread, sample)?)))
            .collect();
        if still.len() < 2 {
            return place;
        }
        still.sort_by(|a, b| self.threads[a.0].lead_s.total_cmp(&self.threads[b.0].lead_s));
        let margin = self.cfg.crowd.margin;
        let remote_cost = self.aspiration.remote_cost();
        let (mut behind, mut ahead) = (0, still.len() - 1);
        while behind < ahead {
            let (b, b_ran) = still[behind];
            let (a, a_ran) = still[ahead];
            if self.threads[a].lead_s - self.threads[b].lead_s < gap_s {
                break;
            }
            // The place ahead must run the one behind faster (away from its
            // memory, at the remote cost); a pair that does not qualify is
            // passed over on the side that fails.
            let (node_a, node_b) = (self.node_of_core(place[a]), self.node_of_core(place[b]));
            let away = |index: usize, node: usize| usize::from(self.threads[index].numa.home != node);
            let farther = node_a != node_b && away(a, node_b) + away(b, node_a) > away(a, node_a) + away(b, node_b);
            let ahead_runs_it = match (farther, self.worker_ended) {
                (false, _) => a_ran,
                (true, true) => a_ran / slower_on(node_b, node_a, self.threads[b].numa.home, remote_cost),
                (true, false) => 0.0,
            };
            if ahead_runs_it > b_ran * (1.0 + margin) {
                place.swap(a, b);
                behind += 1;
                ahead -= 1;
            } else if a_ran <= b_ran * (1.0 + margin) {
                ahead -= 1;
            } else {
                behind += 1;
            }
        }
        place
    }

    /// Crowd moves over the whole machine, on a NUMA tick: a thread may
    /// also leave its node for a core of another where the run shares
    /// promise more than the remote cost takes (`slower_on`: the NUMA
    /// level's `remote_cost` away from its home; no bonus for going home,
    /// where its memory may no longer be). Load that moved onto a node
    /// leaves the program crowded there; one aspiration move per NUMA
    /// period is slow to follow, and threads that meet at barriers all
    /// measure the same speed, which the aspiration level compares. A core
    /// of another node none of the program's threads holds is not a
    /// destination (what loads it is not known: trying it is cheap inside
    /// a node, not across), nor is any other node for a thread that
    /// crossed less than [`CROSS_AGAIN_AFTER_S`] ago.
    ///
    /// Where memory follows the threads (`memory_follows`, the kernel's
    /// NUMA balancing), a node holding fewer of the program's awake threads
    /// per core than the thread's own costs only the passing remote cost
    /// ([`LearnPolicy::passing_remote_cost`]), and so does any core of such
    /// a node the program holds none of, unless another program's load was
    /// measured there less than [`CROSS_AGAIN_AFTER_S`] ago (the crowd
    /// forgets it sooner: sim, 4x8 `independent` D, the threads on node 3
    /// ended as the load came there at 60 s, and 5 s after the last
    /// measured it four threads crossed there to a tenth of a core; seed 1
    /// 79.7 -> 78.1 s): load that moved onto the node
    /// the program was on leaves the node it left idle, and the remote cost
    /// that kept the threads off it lasts only until their memory follows
    /// (sim, `--numa-balancing 2s`, 8x32 `barrier` D: the learner kept 37
    /// threads on the node the load had moved to, beside an idle node, and
    /// took 1.09x Linux's time; 0.86x with this). A node as crowded as the
    /// thread's own keeps the full remote cost: crossing there evens
    /// nothing, and at a passing cost threads traded nodes for shares the
    /// crowd's promise overrated (4x8 `barrier` C.2 with each node's first
    /// half loaded: 1.05x Linux).
    fn moves_across_nodes(&mut self, input: &PeriodInput<'_>, occupants: Vec<Occupant>) -> Vec<usize> {
        let whole = [self.cores.clone()];
        let occupants: Vec<Occupant> = occupants.into_iter().map(|o| Occupant { area: 0, ..o }).collect();
        // The places the awake threads hold, each node's awake threads per
        // core, and whether any is there.
        let mut held = vec![false; self.layout.places().len()];
        let mut per_core = vec![0.0; self.layout.nodes()];
        let mut node_held = vec![false; self.layout.nodes()];
        for occupant in occupants.iter().filter(|o| !o.asleep) {
            held[occupant.place] = true;
            if let Some(node) = self.layout.places()[occupant.place].node {
                per_core[node] += 1.0 / self.node_cores[node].len().max(1) as f64;
                node_held[node] = true;
            }
        }
        let remote_cost = self.aspiration.remote_cost();
        // Where memory follows: the passing remote cost, and the load
        // measured lately on each core (within a crossing's stay): a node
        // the program left is not taken to be idle the moment the crowd
        // forgets it.
        let passing = self.passing_remote_cost(input.time_s).map(|cost| {
            let lately_loaded: Vec<bool> = (0..held.len())
                .map(|core| self.crowd.loaded_within(core, input.time_s, CROSS_AGAIN_AFTER_S))
                .collect();
            (cost, lately_loaded)
        });
        let threads: Vec<(usize, usize, bool)> = self
            .threads
            .iter()
            .map(|t| {
                let cooling = t.crossed_at.is_some_and(|at| input.time_s - at < CROSS_AGAIN_AFTER_S);
                (t.numa.node, t.numa.home, cooling)
            })
            .collect();
        let layout = &self.layout;
        let cost = |index: usize, core: usize| {
            let (node, home, cooling) = threads[index];
            let to = layout.places()[core].node.unwrap_or(node);
            if to == node {
                return 1.0;
            }
            if cooling {
                return f64::INFINITY;
            }
            // Where memory follows, a node with fewer of the program's
            // threads per core (none: the load left it) costs a passing
            // remote cost, any of its cores if the program holds none.
            if let Some((passing, lately_loaded)) = &passing
                && per_core[to] < per_core[node]
                && (held[core] || (!node_held[to] && !lately_loaded[core]))
            {
                return if to == home { 1.0 } else { *passing };
            }
            if held[core] {
                slower_on(node, to, home, remote_cost)
            } else {
                f64::INFINITY
            }
        };
        self.crowd
            .moves_costed(&self.layout, &self.cfg.crowd, &whole, &occupants, input.time_s, cost)
    }

    /// How many times slower, spread over its stay, a thread runs on a node
    /// away from its memory where the memory follows it: the remote cost
    /// for the `memory_follows` seconds of work until its memory is there
    /// too, then none, over a stay taken as long as the program has run so
    /// far (as likely to run as long again), at least
    /// [`CROSS_AGAIN_AFTER_S`]. `None` where memory stays, and for a program
    /// ever seen spinning ([`CROSS_MAX_WAITING`]): its run shares do not
    /// tell crowding, so the crowd's promise of another node is no better
    /// than a guess (sim, 2x14 `barrier-spin` D with NUMA balancing: one
    /// NUMA tick with the waiting share briefly below the bound sent 18
    /// threads across, 0.97 -> 1.08x Linux).
    fn passing_remote_cost(&self, time_s: f64) -> Option<f64> {
        let follows_s = self.aspiration.memory_follows_s()?;
        if self.seen_waiting {
            return None;
        }
        let stay_s = CROSS_AGAIN_AFTER_S.max(time_s);
        Some(1.0 + (self.aspiration.remote_cost() - 1.0) * (follows_s / stay_s).min(1.0))
    }

    /// Step 4 with `moves = "drawn"` (or without crowd moves): each
    /// measured thread's automaton draws its place; fresh and unmeasured
    /// threads keep theirs.
    fn drawn_moves(&mut self, speeds: &[Option<f64>]) -> Vec<usize> {
        let rng = &mut self.rng;
        let (layout, core_level) = (&self.layout, self.cfg.core_level);
        // Where Linux measured decisively worse, a thread's whole-node
        // action (Linux places it) is known to lose: only cores are drawn.
        let cores_only = self.guard.os_blind();
        let is_core = |place: usize| layout.is_core(place);
        // A thread that was not measured this period (it hardly ran) keeps
        // its place: a new draw would move it without anything learned.
        self.threads
            .iter_mut()
            .zip(speeds)
            .map(|(thread, speed)| {
                if !core_level {
                    thread.fresh = false;
                    layout.node_place(thread.numa.node)
                } else if std::mem::take(&mut thread.fresh) || speed.is_none() {
                    thread.pla.current()
                } else if cores_only {
                    thread.pla.choose_among(rng, is_core)
                } else {
                    thread.pla.choose(rng)
                }
            })
            .collect()
    }

    /// Step 3 on a NUMA tick: one aspiration step over the mean speeds since
    /// the last tick, then the (at most one) migration.
    fn numa_tick(&mut self) {
        let mean_speeds: Vec<Option<f64>> = self
            .threads
            .iter()
            .map(|t| (t.numa_speed_count > 0).then(|| t.numa_speed_sum / f64::from(t.numa_speed_count)))
            .collect();
        let mut states: Vec<NumaState> = self.threads.iter().map(|t| t.numa).collect();
        let migration = self.aspiration.step(&mut states, &mean_speeds, &mut self.rng);
        for (thread, state) in self.threads.iter_mut().zip(states) {
            thread.numa = state;
            thread.numa_speed_sum = 0.0;
            thread.numa_speed_count = 0;
        }
        if let Some(migration) = migration {
            let core = self.least_crowded_core(migration.to);
            let pla = self.fresh_pla(migration.to, core);
            let mover = &mut self.threads[migration.thread];
            mover.pla = pla;
            mover.fresh = true;
        }
    }
}

impl Policy for LearnPolicy {
    fn name(&self) -> String {
        format!("learn:{}", self.cfg.objective)
    }

    fn guard_stats(&self) -> Option<GuardStats> {
        self.cfg.guard.enabled.then(|| self.guard.stats())
    }

    fn guard_arm(&self) -> Option<Arm> {
        self.cfg.guard.enabled.then(|| self.guard.arm())
    }

    fn wants_cores(&self) -> bool {
        self.guard.os_window_ending() || self.threads.iter().any(|thread| thread.locate)
    }

    fn decide(&mut self, input: &PeriodInput<'_>) -> Decision {
        self.reconcile(input);

        if let Some(w) = input.waiting.filter(|w| (0.0..=1.0).contains(w)) {
            self.waiting_avg = Some(self.waiting_avg.map_or(w, |a| a + WAITING_AVERAGE_WEIGHT * (w - a)));
            self.seen_waiting |= self.waiting_avg.is_some_and(|a| a >= CROSS_MAX_WAITING);
        }
        if self.forgets_at.is_some_and(|at| input.time_s >= at) {
            // A core the crowd believed loaded looks idle now: the learner's
            // next probe may try it.
            self.forgets_at = None;
            self.guard.learner_changed();
        }
        self.locate_new_threads(input);
        self.record_leads(input);
        let arm = self.guard.next(input.progress_or_speed_sum(), Signs::of(input));
        // Cores asked for at the end of Linux's own window are its placement
        // to hand back; asked for to locate new threads, they are not.
        let linux_placement = self.guard.ended_linux_s_own_window();
        if let Some(mut place) = self.hand_back.places(input, arm, self.layout.whole(), linux_placement) {
            self.hand_back_beside_memory(&mut place);
            // The OS's window: nothing is learned from it, and the first
            // learner period after it keeps every thread's last place.
            self.after_os = true;
            return Decision {
                place,
                utility: vec![f64::NAN; self.threads.len()],
            };
        }
        let after_os = std::mem::take(&mut self.after_os);
        if !std::mem::replace(&mut self.started, true) {
            self.start_where_linux_was(input, StartNodes::LeaveCrowded);
        } else if after_os {
            self.after_linux_window(input);
        }
        let speeds: Vec<Option<f64>> = if after_os {
            vec![None; input.threads.len()]
        } else {
            input.threads.iter().map(|t| t.speed).collect()
        };
        let utility = self.cfg.objective.utilities(&speeds);
        for (thread, &u) in self.threads.iter_mut().zip(&utility) {
            if !thread.fresh {
                thread.pla.learn(u);
            }
        }

        if self.layout.nodes() > 1 && self.cfg.numa_level {
            for (thread, &speed) in self.threads.iter_mut().zip(&speeds) {
                if let (false, Some(speed)) = (thread.fresh, sanitise_speed(speed)) {
                    thread.numa_speed_sum += speed;
                    thread.numa_speed_count += 1;
                }
            }
            // A tick that falls in Linux's window is skipped: what was
            // measured there is Linux's placement. Taking it at the next
            // learner period instead was tried (2026-11-25) and lost where
            // Linux is right (sim, 2x14, independent C.1, 300 s: +4.1% ->
            // +11.0% over os): a migration at the very start of each
            // learner window, from speeds of the window before.
            if input.numa_tick {
                self.numa_tick();
            }
        }

        let place = if self.cfg.core_level && self.holds_places() {
            // Each thread holds its automaton's first place: its round-robin
            // start on Linux's node, or where the NUMA level (or a crowd move
            // across nodes) moved it, which start a fresh automaton there.
            // The guard compares that with Linux's placement, and knows a
            // probe that moved nothing would be the same again. Not its
            // current place: crowd moves inside the node made before the
            // spinning showed (the load came, and the waiting share's average
            // takes a second to rise) did so on run shares that did not tell
            // crowding (sim, 8x32 `barrier-spin` C.3: 64 of 256 threads
            // doubled up on free cores in the period the load came, and held
            // there, the learner's windows 8% below the pin's).
            let place: Vec<usize> = self
                .threads
                .iter_mut()
                .map(|thread| {
                    thread.fresh = false;
                    let first = thread.pla.first();
                    thread.pla.take(first);
                    first
                })
                .collect();
            self.guard.placed(input.threads, &place);
            place
        } else if self.cfg.core_level && self.crowd_moves_on() {
            let place = self.crowd_moves(input, after_os);
            // Best replies: a probe in which none moved would be the same
            // again (drawn places may explore next time, so they are not
            // reported), until a core's believed load is forgotten.
            self.guard.placed(input.threads, &place);
            self.forgets_at = self.crowd.next_forgetting(input.time_s, &self.cfg.crowd, &place);
            place
        } else {
            self.drawn_moves(&speeds)
        };
        Decision { place, utility }
    }
}

/// Crowd moves take threads to other nodes only while the program spends
/// less than this share of its CPU time in waiting code: run shares do not
/// tell crowding where siblings spin (crowd.rs; measured in the simulator:
/// `barrier-spin` D, 2x14, 138 -> 170 s when spin-then-block threads
/// crossed).
const CROSS_MAX_WAITING: f64 = 0.05;

/// Seconds after a crowd move took a thread to another node before it may
/// cross again: measurements right after a move are the move's, and two
/// nodes' threads trading places every NUMA period pay migrations for
/// nothing.
const CROSS_AGAIN_AFTER_S: f64 = 10.0;

/// A node holding at least this many times the program's mean of awake
/// threads per core is crowded: Linux kept the program off a node that
/// another program loads, or has not spread it yet.
const CROWDED_NODE_FACTOR: f64 = 1.5;

/// Where no other program ran on the program's CPUs in Linux's last period
/// (`PeriodInput::others` at most [`ALONE_OTHERS_AT_MOST`]) and memory
/// follows the threads, a node holding this many times the mean is
/// crowded: the imbalance is the program's own, Linux's node counts a
/// thread or two off the pin's, and the crowd's measurements settle which
/// threads leave (sim, 4x8 `barrier` A.1: Linux's 11, 13, 8 and 8 threads
/// where the pin has 12, 12, 8 and 8 left one core with five threads
/// gating every round, regret 1.149 -> 1.100; the 160 cells reporting
/// nothing 0.9762 -> 0.9742, none worse by 0.5%). Beside another
/// program's load Linux's counts answer the load (taken for crowding from
/// 1.05x, they cost 4x8 `barrier` A.2 1.08 -> 1.14 and 8x32
/// `barrier-spin` D 1.020 -> 1.025x Linux's time), and where memory stays
/// the threads moved would run remote for the rest of the run.
const ALONE_CROWDED_NODE_FACTOR: f64 = 1.05;

/// The other programs' load counts as spread over every node where the
/// node with the least of it carries at least this share of what the node
/// with the most carries ([`LearnPolicy::others_even_over_nodes`]): the
/// papers' X.2 scenarios load half of every node's cores (4x8 A.2: 0.32,
/// 0.32, 0.10 and 0.10 of the cores' time), D one node or half of them.
const OTHERS_SPREAD_AT_LEAST: f64 = 0.25;

/// Of the program's CPUs' time, at most this share ran other programs for
/// the program to count as alone there (a live target counts busy time by
/// clock ticks: a few points of noise on a few CPUs).
const ALONE_OTHERS_AT_MOST: f64 = 0.05;

/// The held places of a program that spins are dealt again around the
/// other programs' load where that takes at least this much of it off the
/// threads (the other programs' shares of the threads' cores, summed over
/// the threads; [`LearnPolicy::deal_held_places_around_others`]).
const DEALT_GAIN_AT_LEAST: f64 = 0.5;

/// Whether other programs ran at most [`ALONE_OTHERS_AT_MOST`] of the
/// program's CPUs' time (`PeriodInput::others`; unknown counts as not).
fn alone_on_its_cpus(input: &PeriodInput<'_>) -> bool {
    input.others.is_some_and(|others| others <= ALONE_OTHERS_AT_MOST)
}

/// A node holding at most this many times the program's mean of awake
/// threads per core was left nearly empty by Linux ...
const EMPTY_NODE_FACTOR: f64 = 0.5;

/// ... and beside it a node holding this many times the mean is crowded:
/// one node of four left empty puts 1.33 times the mean on each of the
/// others, one of eight only 1.14, where what spreading gains the threads
/// no longer pays for taking them away from their memory and Linux's
/// placement (sim, 8x32 `barrier-spin` D: 1.020 -> 1.025 of Linux's time
/// with every node above the mean crowded beside an empty one).
const BESIDE_EMPTY_FACTOR: f64 = 1.25;

/// The same for a program seen spinning: the learner's first probe
/// starts on the round-robin pin where Linux left any node this much
/// denser than the mean (and so another short); a node left nearly empty
/// leaves another above that already.
const SPIN_CROWDED_FACTOR: f64 = 1.1;

/// How Linux left a node: with at least `factor` ([`CROWDED_NODE_FACTOR`]
/// or [`ALONE_CROWDED_NODE_FACTOR`]) times the
/// program's mean of awake threads per core, or [`BESIDE_EMPTY_FACTOR`]
/// times it where it left another node with at most [`EMPTY_NODE_FACTOR`]
/// times it (crowded); with fewer than the mean (short); or neither.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NodeCrowd {
    Crowded,
    Short,
    Even,
}

/// How many of `nodes` (each thread's node, `None`: on none) are on each
/// of `node_count` nodes.
fn threads_per_node(nodes: impl Iterator<Item = Option<usize>>, node_count: usize) -> Vec<usize> {
    let mut count = vec![0; node_count];
    for node in nodes.flatten() {
        count[node] += 1;
    }
    count
}

/// Every node's [`NodeCrowd`] from the node Linux had each thread on
/// (`None`: not placed) and whether it is awake, with `cores[n]` cores on
/// node n; `None` when no node is crowded (or there is one node).
fn crowded_nodes(linux_node: &[Option<usize>], awake: &[bool], cores: &[usize], factor: f64) -> Option<Vec<NodeCrowd>> {
    let awake_nodes = linux_node
        .iter()
        .zip(awake)
        .map(|(&node, &awake)| node.filter(|_| awake));
    let counts = threads_per_node(awake_nodes, cores.len());
    let total: usize = counts.iter().sum();
    let all_cores: usize = cores.iter().sum();
    if cores.len() < 2 || total == 0 || all_cores == 0 {
        return None;
    }
    let mean = total as f64 / all_cores as f64;
    let density = |count: usize, c: usize| count as f64 / c.max(1) as f64;
    // Beside a node Linux left nearly empty, a node with
    // BESIDE_EMPTY_FACTOR times the mean is one to leave too, though below
    // `factor`.
    let left_empty = counts
        .iter()
        .zip(cores)
        .any(|(&count, &c)| c > 0 && density(count, c) <= EMPTY_NODE_FACTOR * mean);
    let crowd: Vec<NodeCrowd> = counts
        .iter()
        .zip(cores)
        .map(|(&count, &c)| {
            let density = density(count, c);
            if c > 0 && (density >= factor * mean || (left_empty && density >= BESIDE_EMPTY_FACTOR * mean)) {
                NodeCrowd::Crowded
            } else if c > 0 && density < mean {
                NodeCrowd::Short
            } else {
                NodeCrowd::Even
            }
        })
        .collect();
    crowd.contains(&NodeCrowd::Crowded).then_some(crowd)
}

/// Swaps the start nodes of pairs of threads (`node`, aligned with
/// `home`, each thread's memory's node, and `asleep`) so that more start
/// where their memory is, each node keeping as many threads, awake and
/// asleep: a thread away from its home trades places with one on that node
/// that is away from its own (best, one whose home is the first's node),
/// in the same state. No thread ends farther from its memory. One pass over
/// the threads (a partner met before it may be left away; passes until
/// nothing trades changed no cell of 4x8 `barrier` A.1, A.3, C.1 in the
/// simulator), each looking only at the threads away on one node.
fn swap_toward_homes(node: &mut [Option<usize>], home: &[Option<usize>], asleep: &[bool]) {
    use std::collections::BTreeSet;
    let nodes = node.iter().chain(home).flatten().max().map_or(0, |&n| n + 1);
    // The threads away from their memory on each node, by state, in order.
    let mut away: Vec<[BTreeSet<usize>; 2]> = vec![[BTreeSet::new(), BTreeSet::new()]; nodes];
    for (index, (&on, &home)) in node.iter().zip(home).enumerate() {
        if let (Some(on), Some(home)) = (on, home)
            && on != home
        {
            away[on][usize::from(asleep[index])].insert(index);
        }
    }
    for a in 0..node.len() {
        let (Some(from), Some(to)) = (node[a], home[a]) else {
            continue;
        };
        if from == to {
            continue;
        }
        let state = usize::from(asleep[a]);
        let there = &away[to][state];
        let Some(b) = there
            .iter()
            .copied()
            .find(|&b| home[b] == Some(from))
            .or_else(|| there.first().copied())
        else {
            continue;
        };
        away[to][state].remove(&b);
        away[from][state].remove(&a);
        node[a] = Some(to);
        node[b] = Some(from);
        if home[b] != Some(from) {
            away[from][state].insert(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aspiration::{AspirationConfig, AspirationLevels};
    use crate::crowd::CrowdConfig;
    use crate::guard::{Arm, GuardConfig};

    /// The papers' learner alone: round-robin start, the automata draw
    /// the cores, a reset when a thread ends, no guard windows.
    fn papers() -> LearnConfig {
        LearnConfig {
            guard: GuardConfig {
                enabled: false,
                ..GuardConfig::default()
            },
            start: Start::RoundRobin,
            moves: Moves::Drawn,
            reset_on_exit: true,
            ..LearnConfig::default()
        }
    }
    use crate::objective::Objective;
    use crate::{PlaceKind, ThreadSample};

    /// The papers' learner with crowd moves and ζ = 0 (no experiments by
    /// satisfied threads at the NUMA level).
    fn crowd_moves_without_zeta() -> LearnConfig {
        LearnConfig {
            moves: Moves::Crowd,
            numa: AspirationConfig {
                zeta: 0.0,
                ..AspirationConfig::default()
            },
            ..papers()
        }
    }

    fn samples(keys: &[ThreadKey], speed: Option<f64>) -> Vec<ThreadSample> {
        keys.iter().map(|&key| ThreadSample::of(key, speed)).collect()
    }

    fn input(period: u64, threads: &[ThreadSample], numa_tick: bool) -> PeriodInput<'_> {
        PeriodInput {
            numa_tick,
            ..PeriodInput::of(period, period as f64 * 0.05, threads)
        }
    }

    #[test]
    fn threads_away_from_their_memory_trade_start_nodes_with_threads_away_on_their_home() {
        // Thread 0 starts on node 1 with its memory on 0, thread 1 on 0
        // with its memory on 1: they trade, both home. Thread 2 (on 1,
        // memory on 2) has no partner awake and away on node 2; thread 4,
        // asleep, none asleep on node 1; thread 3 is home.
        let mut node = vec![Some(1), Some(0), Some(1), Some(0), Some(2), Some(1)];
        let home = vec![Some(0), Some(1), Some(2), Some(0), Some(1), Some(2)];
        let asleep = [false, false, false, false, true, false];
        swap_toward_homes(&mut node, &home, &asleep);
        assert_eq!(node, vec![Some(0), Some(1), Some(1), Some(0), Some(2), Some(1)]);
        // A partner whose home is elsewhere still trades: one more home,
        // none farther.
        let mut node = vec![Some(0), Some(1), None];
        swap_toward_homes(&mut node, &[Some(1), Some(2), Some(0)], &[false; 3]);
        assert_eq!(node, vec![Some(1), Some(0), None]);
    }

    #[test]
    fn name_carries_the_objective() {
        let cfg = LearnConfig {
            objective: Objective::Balanced { gamma: 1.0 },
            ..papers()
        };
        assert_eq!(
            LearnPolicy::new(Layout::uniform(1, 2), cfg, 0).name(),
            "learn:balanced:1"
        );
        assert_eq!(LearnPolicy::new(Layout::uniform(1, 2), papers(), 0).name(), "learn:own");
    }

    #[test]
    fn empty_thread_lists_are_fine() {
        let mut policy = LearnPolicy::new(Layout::uniform(2, 2), papers(), 1);
        for period in 0..3 {
            assert_eq!(policy.decide(&input(period, &[], true)), Decision::default());
        }
    }

    #[test]
    fn new_threads_start_round_robin_with_actions_of_their_node() {
        let layout = Layout::uniform(2, 2); // node 0: cores 0 1, node place 2; node 1: 3 4, 5; machine 6
        let mut policy = LearnPolicy::new(layout, papers(), 1);
        let threads = samples(&[1, 2, 3, 4, 5], None);
        let decision = policy.decide(&input(0, &threads, false));
        // One core of each node in turn.
        assert_eq!(decision.place, vec![0, 3, 1, 4, 0]);
        assert!(decision.utility.iter().all(|u| u.is_nan()));
        assert_eq!(policy.pla(1).unwrap().actions(), &[0, 1, 2]);
        assert_eq!(policy.pla(2).unwrap().actions(), &[3, 4, 5]);
        assert_eq!(policy.numa_state(4).unwrap().node, 1);
        assert_eq!(policy.numa_state(5).unwrap().node, 0);

        // A later arrival continues the sequence, the others draw from
        // their node.
        let threads = samples(&[1, 2, 3, 4, 5, 6], Some(0.5));
        let decision = policy.decide(&input(1, &threads, false));
        assert_eq!(decision.place[5], 3);
        for (key, &place) in (1..=5).zip(&decision.place) {
            assert!(policy.pla(key).unwrap().actions().contains(&place));
        }
        assert_eq!(policy.keys().collect::<Vec<_>>(), vec![1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn where_linux_measured_blind_no_thread_is_left_to_it() {
        // Two threads, two cores: the program progresses twice as fast
        // with the threads on different cores as with either of them left
        // to Linux, while each thread's own speed is the same everywhere
        // (what `own` sees of spinning siblings). Default configuration.
        let drawn = LearnConfig {
            moves: Moves::Drawn,
            ..LearnConfig::default()
        };
        let mut policy = LearnPolicy::new(Layout::uniform(1, 2), drawn, 9);
        let whole = policy.layout().whole();
        let threads = samples(&[1, 2], Some(0.5));
        let mut last = vec![whole, whole];
        let (mut blind_draws, mut whole_draws) = (0, 0);
        let mut was_blind_learning = false;
        for period in 0..3000 {
            let apart = last[0] != last[1] && !last.contains(&whole);
            let mut input = input(period, &threads, false);
            input.progress = Some(if apart { 2.0 } else { 1.0 });
            let decision = policy.decide(&input);
            let blind_learning = policy.guard().arm() == Arm::Learn && policy.guard().os_blind();
            // The first such period may keep a place drawn before.
            if blind_learning && was_blind_learning {
                blind_draws += 1;
                whole_draws += decision.place.iter().filter(|&&p| p == whole).count();
            }
            was_blind_learning = blind_learning;
            last = decision.place;
        }
        assert!(blind_draws > 1000, "the learner led decisively: {blind_draws} periods");
        assert_eq!(whole_draws, 0, "no thread left to Linux while it measured blind");
    }

    #[test]
    fn threads_born_under_linux_keep_the_node_they_were_first_seen_on_as_their_home() {
        // Node 0: cores 0 1; node 1: cores 3 4. Four threads appear in
        // period 0 under Linux; the next period's input (asked for once)
        // has them on 0 1 3 4, where they first touched their memory. Linux
        // then swaps 1 and 3 between the nodes, and its windows end so. The
        // learner starts each thread on the node Linux has it on, with its
        // memory (its NUMA home) where it was first seen.
        let cfg = LearnConfig {
            guard: GuardConfig {
                window: 2,
                assumed_loss: 0.0,
                ..GuardConfig::default()
            },
            ..LearnConfig::default()
        };
        let mut policy = LearnPolicy::new(Layout::uniform(2, 2), cfg, 5);
        let threads = samples(&[1, 2, 3, 4], Some(0.5));
        let first: Vec<Option<usize>> = vec![Some(0), Some(1), Some(3), Some(4)];
        let swapped: Vec<Option<usize>> = vec![Some(3), Some(1), Some(0), Some(4)];
        let mut asked = Vec::new();
        let mut learner_started = false;
        for period in 0..20 {
            let mut input = input(period, &threads, false);
            input.progress = Some(1.0);
            if policy.wants_cores() {
                asked.push(period);
                input.cores = Some(if period == 1 { &first } else { &swapped });
            }
            policy.decide(&input);
            learner_started |= policy.guard().arm() == Arm::Learn;
        }
        assert!(learner_started, "the learner was probed");
        assert_eq!(
            asked.first(),
            Some(&1),
            "new threads are located in the period after they appear"
        );
        assert_eq!(policy.numa_state(1).unwrap().node, 1, "starts where Linux has it");
        let homes: Vec<usize> = (1..=4).map(|key| policy.numa_state(key).unwrap().home).collect();
        assert_eq!(homes, vec![0, 0, 1, 1], "memory where each was first seen");
    }

    #[test]
    fn linux_gets_its_threads_back_beside_their_memory() {
        // Node 0: cores 0 1 (node place 2); node 1: cores 3 4 (node place
        // 5). Linux has threads 1 2 on node 0 and 3 4 on node 1 when the
        // learner starts (their memory is there); later it ends a window
        // with 1 and 3 swapped between the nodes (caught rebalancing). The
        // learner's probes lose, so Linux stays champion, and every Linux
        // window starts by handing the threads back: 2 and 4 to their cores,
        // 1 and 3 to their memory's node, not to the swap.
        let cfg = LearnConfig {
            guard: GuardConfig {
                window: 2,
                assumed_loss: 0.0,
                probe_cost: 0.2,
                savings: 0.5,
                tie_backoff: false,
                ..GuardConfig::default()
            },
            ..LearnConfig::default()
        };
        let mut policy = LearnPolicy::new(Layout::uniform(2, 2), cfg, 5);
        let threads = samples(&[1, 2, 3, 4], Some(0.5));
        let home: Vec<Option<usize>> = vec![Some(0), Some(1), Some(3), Some(4)];
        let swapped: Vec<Option<usize>> = vec![Some(3), Some(1), Some(0), Some(4)];
        let (mut learner_before, mut hand_backs) = (false, Vec::new());
        let mut last_was_linux = true;
        for period in 0..400 {
            let cores = if period < 100 { &home } else { &swapped };
            let mut input = input(period, &threads, false);
            input.progress = Some(if last_was_linux { 1.0 } else { 0.9 });
            if policy.wants_cores() {
                input.cores = Some(cores);
            }
            let decision = policy.decide(&input);
            let linux = policy.guard().arm() == Arm::Os;
            if linux && learner_before && period > 110 {
                hand_backs.push(decision.place.clone());
            }
            learner_before = !linux;
            last_was_linux = linux;
        }
        assert_eq!(policy.guard().champion(), Arm::Os);
        assert!(
            hand_backs.len() >= 3,
            "Linux's windows after the learner's: {}",
            hand_backs.len()
        );
        for place in &hand_backs {
            assert_eq!(place, &vec![2, 1, 5, 4], "handed back beside memory");
        }
    }

    /// Learner periods over 3000 when Linux makes 1.0 and the learner's
    /// places 0.8, each thread alone on its core (crowd moves see nothing
    /// to gain, so none moves); a third thread appears at period `arrival`.
    /// Returns them and the learner periods from `arrival` on.
    fn learner_periods_beside_a_better_linux(cfg: LearnConfig, arrival: u64) -> (usize, Vec<u64>) {
        let mut policy = LearnPolicy::new(Layout::uniform(1, 3), cfg, 3);
        let whole = policy.layout().whole();
        let sample = |key| ThreadSample {
            key,
            speed: Some(1.0),
            share: Some(1.0),
            grain_s: None,
            worked: None,
        };
        let (two, three) = ([sample(1), sample(2)], [sample(1), sample(2), sample(3)]);
        let mut learner = 0;
        let mut after = Vec::new();
        let mut last_was_linux = true;
        for period in 0..3000 {
            let threads: &[ThreadSample] = if period < arrival { &two } else { &three };
            let mut input = input(period, threads, false);
            input.progress = Some(if last_was_linux { 1.0 } else { 0.8 });
            let decision = policy.decide(&input);
            last_was_linux = decision.place.contains(&whole);
            if policy.guard().arm() == Arm::Learn {
                learner += 1;
                if period >= arrival {
                    after.push(period);
                }
            }
        }
        (learner, after)
    }

    #[test]
    fn a_learner_that_moves_nothing_is_not_probed_again_and_again() {
        let off = LearnConfig {
            guard: GuardConfig {
                replay_change: 0.0,
                ..GuardConfig::default()
            },
            ..LearnConfig::default()
        };
        let (replayed, _) = learner_periods_beside_a_better_linux(off, u64::MAX);
        let (held, _) = learner_periods_beside_a_better_linux(LearnConfig::default(), u64::MAX);
        assert!(held * 2 < replayed, "learner periods: {held} held, {replayed} replayed");
        // A new thread makes the next probe a new placement: it comes as
        // soon as the budget allows, within a few windows here.
        let (_, after) = learner_periods_beside_a_better_linux(LearnConfig::default(), 2000);
        assert!(after.first().is_some_and(|&p| p < 2000 + 4 * 6), "{after:?}");
    }

    #[test]
    fn an_ended_thread_resets_everyone_round_robin() {
        let layout = Layout::uniform(1, 3);
        let mut policy = LearnPolicy::new(layout, papers(), 5);
        let all = samples(&[10, 20, 30, 40], Some(1.0));
        for period in 0..200 {
            policy.decide(&input(period, &all, false));
        }
        assert!(policy.pla(40).unwrap().ubar().is_some());
        let rest = samples(&[10, 30, 40], Some(1.0));
        let decision = policy.decide(&input(200, &rest, false));
        assert_eq!(decision.place, vec![0, 1, 2], "round-robin from scratch");
        for (first, key) in [10, 30, 40].into_iter().enumerate() {
            let pla = policy.pla(key).unwrap();
            assert_eq!(pla.ubar(), None, "fresh automaton");
            assert_eq!(
                pla.x(),
                Pla::new(vec![0, 1, 2, 3], first, LearnConfig::default().pla).x()
            );
        }
        assert!(policy.pla(20).is_none());
        // A thread arriving afterwards continues the new sequence.
        let more = samples(&[10, 30, 40, 50], Some(1.0));
        assert_eq!(policy.decide(&input(201, &more, false)).place[3], 0);
    }

    #[test]
    fn without_reset_an_ended_thread_changes_nobody() {
        let cfg = LearnConfig {
            reset_on_exit: false,
            ..papers()
        };
        let mut policy = LearnPolicy::new(Layout::uniform(1, 3), cfg, 5);
        let all = samples(&[10, 20, 30], Some(1.0));
        for period in 0..50 {
            policy.decide(&input(period, &all, false));
        }
        let decision = policy.decide(&input(50, &samples(&[10, 30], Some(1.0)), false));
        for key in [10, 30] {
            // a reset automaton would have no running average yet
            assert!(policy.pla(key).unwrap().ubar().is_some(), "thread {key} was reset");
        }
        assert_eq!(decision.place.len(), 2);
    }

    #[test]
    fn one_core_and_silent_threads_are_handled() {
        let mut policy = LearnPolicy::new(Layout::uniform(1, 1), papers(), 3);
        let threads = vec![ThreadSample::of(1, None), ThreadSample::of(2, Some(0.5))];
        for period in 0..100 {
            let decision = policy.decide(&input(period, &threads, true));
            assert!(decision.place.iter().all(|&p| p == 0 || p == 1), "{decision:?}");
            assert!(decision.utility[0].is_nan());
        }
        assert_eq!(policy.pla(1).unwrap().ubar(), None, "never measured, never learned");
        assert_eq!(policy.pla(2).unwrap().ubar(), Some(0.5));
    }

    #[test]
    fn a_numa_migration_gives_a_fresh_strategy_on_the_new_node() {
        // Node 0 is slow for its threads: with zeta = 1 one of them tries
        // node 1 on the first tick after being measured.
        let cfg = LearnConfig {
            guard: GuardConfig {
                enabled: false,
                ..GuardConfig::default()
            },
            numa: AspirationConfig {
                zeta: 1.0,
                ..AspirationConfig::default()
            },
            ..papers()
        };
        let layout = Layout::new(&[vec![1, 1, 1], vec![1, 1]]); // node 0: 0 1 2 | 3; node 1: 4 5 | 6
        let actions = [vec![0, 1, 2, 3], vec![4, 5, 6]];
        let mut policy = LearnPolicy::new(layout, cfg, 8);
        let keys = [1, 2, 3];
        // Node 0's threads run at 0.3, node 1's at 0.9.
        let mut threads = samples(&keys, Some(0.3));
        threads[1].speed = Some(0.9);
        // Round-robin takes one core of each node in turn.
        assert_eq!(policy.decide(&input(0, &threads, false)).place, vec![0, 4, 1]);
        let before: Vec<usize> = keys.iter().map(|&k| policy.numa_state(k).unwrap().node).collect();
        assert_eq!(before, vec![0, 1, 0]);
        let mut places = Vec::new();
        for period in 1..20 {
            places = policy.decide(&input(period, &threads, false)).place;
        }
        let decision = policy.decide(&input(20, &threads, true));
        let movers: Vec<usize> = (0..keys.len())
            .filter(|&slot| policy.numa_state(keys[slot]).unwrap().node != before[slot])
            .collect();
        assert_eq!(movers.len(), 1, "exactly one thread migrates");
        let slot = movers[0];
        assert_eq!(before[slot], 0, "a thread of the slow node");
        let (mover, to) = (keys[slot], 1);
        let pla = policy.pla(mover).unwrap();
        assert_eq!(pla.actions(), &actions[to][..]);
        assert_eq!(pla.ubar(), None, "strategy reset");
        // The least crowded core of its new node (the lowest on a tie),
        // taken without drawing.
        let crowd = |core: usize| {
            places
                .iter()
                .enumerate()
                .filter(|&(other, &p)| other != slot && p == core)
                .count()
        };
        let cores = &actions[to][..actions[to].len() - 1];
        let least = *cores.iter().min_by_key(|&&core| (crowd(core), core)).unwrap();
        assert_eq!(
            pla.x(),
            Pla::new(
                actions[to].clone(),
                cores.iter().position(|&c| c == least).unwrap(),
                cfg.pla
            )
            .x()
        );
        assert_eq!(decision.place[slot], least, "least crowded core of its new node");
        let levels: AspirationLevels = policy.numa_state(mover).unwrap().levels.unwrap();
        assert!(
            (levels.rho - 0.3).abs() < 1e-12,
            "aspiration saw the mean speed of the period"
        );
        // The mover learns on its new node from then on.
        for period in 21..40 {
            let decision = policy.decide(&input(period, &threads, false));
            assert!(actions[to].contains(&decision.place[slot]));
        }
    }

    #[test]
    fn a_thread_without_a_measurement_keeps_its_place() {
        let layout = Layout::uniform(1, 4);
        let cfg = LearnConfig {
            guard: GuardConfig {
                enabled: false,
                ..GuardConfig::default()
            },
            pla: crate::PlaConfig {
                lambda: 0.5,
                ..Default::default()
            },
            moves: Moves::Drawn,
            ..Default::default()
        };
        let mut policy = LearnPolicy::new(layout, cfg, 9);
        let keys = [1, 2];
        let first = policy.decide(&input(0, &samples(&keys, Some(0.5)), false));
        let mut moved = false;
        let mut place_of_idle = first.place[0];
        for period in 1..100 {
            let threads = vec![ThreadSample::of(1, None), ThreadSample::of(2, Some(0.5))];
            let decision = policy.decide(&input(period, &threads, false));
            assert_eq!(
                decision.place[0], place_of_idle,
                "the idle thread moved in period {period}"
            );
            moved |= decision.place[1] != first.place[1];
            place_of_idle = decision.place[0];
        }
        assert!(moved, "the measured thread, with lambda 0.5 over 4 cores, explores");
    }

    #[test]
    fn without_the_core_level_every_thread_gets_its_whole_node() {
        let layout = Layout::uniform(2, 3);
        let cfg = LearnConfig {
            guard: GuardConfig {
                enabled: false,
                ..GuardConfig::default()
            },
            core_level: false,
            ..papers()
        };
        let mut policy = LearnPolicy::new(layout.clone(), cfg, 5);
        let keys = [1, 2, 3, 4];
        for period in 0..20 {
            let threads = samples(&keys, Some(0.5));
            let decision = policy.decide(&input(period, &threads, false));
            for (i, &place) in decision.place.iter().enumerate() {
                assert_eq!(
                    layout.places()[place].kind,
                    PlaceKind::Node,
                    "thread {i} period {period}"
                );
            }
        }
    }

    #[test]
    fn without_the_numa_level_no_thread_changes_node() {
        let layout = Layout::uniform(2, 2);
        let cfg = LearnConfig {
            guard: GuardConfig {
                enabled: false,
                ..GuardConfig::default()
            },
            numa_level: false,
            numa: AspirationConfig {
                zeta: 1.0,
                ..AspirationConfig::default()
            },
            ..papers()
        };
        let mut policy = LearnPolicy::new(layout.clone(), cfg, 5);
        let keys = [1, 2, 3];
        let first = policy.decide(&input(0, &samples(&keys, None), false));
        let nodes = |d: &Decision| d.place.iter().map(|&p| layout.places()[p].node).collect::<Vec<_>>();
        let start = nodes(&first);
        for period in 1..200 {
            // Thread 1 is slow on its node: aspiration would move it.
            let threads: Vec<ThreadSample> = keys
                .iter()
                .map(|&key| ThreadSample::of(key, Some(if key == 1 { 0.1 } else { 1.0 })))
                .collect();
            let decision = policy.decide(&input(period, &threads, true));
            assert_eq!(nodes(&decision), start, "period {period}");
        }
    }

    #[test]
    fn numa_ticks_do_nothing_on_one_node() {
        let cfg = LearnConfig {
            numa: AspirationConfig {
                zeta: 1.0,
                ..AspirationConfig::default()
            },
            ..papers()
        };
        let mut policy = LearnPolicy::new(Layout::uniform(1, 2), cfg, 8);
        let threads = samples(&[1, 2], Some(0.3));
        for period in 0..30 {
            policy.decide(&input(period, &threads, true));
        }
        assert_eq!(policy.numa_state(1).unwrap().levels, None);
    }

    #[test]
    fn node_place_is_an_action() {
        let layout = Layout::uniform(2, 2);
        let policy = LearnPolicy::new(layout.clone(), papers(), 0);
        for (node, actions) in policy.node_actions.iter().enumerate() {
            let last = *actions.last().unwrap();
            assert_eq!(layout.places()[last].kind, PlaceKind::Node);
            assert_eq!(layout.places()[last].node, Some(node));
        }
    }

    #[test]
    fn without_the_node_action_threads_choose_among_cores_only() {
        let layout = Layout::uniform(2, 3);
        let cfg = LearnConfig {
            node_action: false,
            ..papers()
        };
        let mut policy = LearnPolicy::new(layout.clone(), cfg, 0);
        let threads = samples(&[1, 2, 3, 4, 5, 6, 7], Some(1.0));
        for period in 0..200 {
            let decision = policy.decide(&input(period, &threads, period % 40 == 39));
            for &place in &decision.place {
                assert_eq!(layout.places()[place].kind, PlaceKind::Core, "period {period}");
            }
        }
        for key in 1..=7 {
            let actions = policy.pla(key).unwrap().actions();
            assert_eq!(actions.len(), 3, "thread {key}: {actions:?}");
        }
    }

    /// The samples of threads `keys` on `places` (aligned; none measured
    /// before the first decision): each measures as its speed and run
    /// share `share(place, threads on that place)`.
    fn crowded_samples(keys: &[ThreadKey], places: &[usize], share: impl Fn(usize, f64) -> f64) -> Vec<ThreadSample> {
        keys.iter()
            .enumerate()
            .map(|(i, &key)| {
                let share = places
                    .get(i)
                    .map(|&p| share(p, places.iter().filter(|&&q| q == p).count() as f64));
                ThreadSample {
                    key,
                    speed: share,
                    share,
                    grain_s: None,
                    worked: None,
                }
            })
            .collect()
    }

    #[test]
    fn load_on_a_node_sends_threads_to_cores_their_siblings_hold_on_another_at_a_numa_tick() {
        // Two nodes of two cores (places 0 1 | 3 4); another program
        // weighs 4 on each core of node 0 and 1 on each of node 1. Round
        // robin puts threads 1 5 on core 0 (a sixth of a core each), 3 on
        // core 1 (a fifth), 2 6 on core 3 (a third each) and 4 on core 4
        // (half). Inside a node nothing gains; across, a second thread on
        // core 4 gets a third and the program gains there more than it
        // loses on core 0: at the NUMA tick, thread 1 crosses, and no more
        // (the last of a core would leave it to the load). Not where a
        // remote cost of 2 halves the promise, not with `across_nodes`
        // off, not while the program spins in waiting code.
        let load = [4.0, 4.0, 0.0, 1.0, 1.0];
        let run = |cfg: LearnConfig, remote_cost: f64, waiting: Option<f64>| {
            let mut policy = LearnPolicy::new(Layout::uniform(2, 2), cfg, 11).assuming_remote_cost(remote_cost);
            let mut places: Vec<usize> = Vec::new();
            let mut moved_before_tick = 0;
            for period in 0..=4 {
                let threads = crowded_samples(&[1, 2, 3, 4, 5, 6], &places, |p, crowd| 1.0 / (crowd + load[p]));
                let mut input = input(period, &threads, period == 4);
                input.waiting = waiting;
                let decision = policy.decide(&input);
                if period == 0 {
                    assert_eq!(decision.place, vec![0, 3, 1, 4, 0, 3], "round robin");
                } else if period < 4 {
                    moved_before_tick += places.iter().zip(&decision.place).filter(|(a, b)| a != b).count();
                }
                places = decision.place;
            }
            let nodes: Vec<(usize, usize)> = (1..=6)
                .map(|key| {
                    let state = policy.numa_state(key).unwrap();
                    (state.node, state.home)
                })
                .collect();
            (moved_before_tick, places, nodes)
        };
        let cfg = crowd_moves_without_zeta();
        let (moved, places, nodes) = run(cfg, 1.0, None);
        assert_eq!(moved, 0, "inside a node nothing gains");
        assert_eq!(places, vec![4, 3, 1, 4, 0, 3]);
        // (node, home): the mover's memory stays where it first ran.
        assert_eq!(nodes, vec![(1, 0), (1, 1), (0, 0), (1, 1), (0, 0), (1, 1)]);
        let stay = vec![0, 3, 1, 4, 0, 3];
        assert_eq!(run(cfg, 2.0, None).1, stay, "a remote cost of 2");
        let off = LearnConfig {
            crowd: CrowdConfig {
                across_nodes: false,
                ..cfg.crowd
            },
            ..cfg
        };
        assert_eq!(run(off, 1.0, None).1, stay, "across_nodes off");
        assert_eq!(run(cfg, 1.0, Some(0.2)).1, stay, "spinning");
    }

    /// The last placement of threads `keys` after four learner periods and
    /// a NUMA tick on `layout`, started round robin, each core's other
    /// program weighing `load[node]` (a thread's run share: 1 / (threads on
    /// its core + that)), with a remote cost of 2, memory following after
    /// `follows` seconds of work elsewhere, and `waiting` each period.
    fn after_a_numa_tick(
        layout: &Layout,
        keys: &[ThreadKey],
        load: &[f64],
        follows: Option<f64>,
        waiting: &dyn Fn(u64) -> Option<f64>,
    ) -> Vec<usize> {
        let cfg = crowd_moves_without_zeta();
        let mut policy = LearnPolicy::new(layout.clone(), cfg, 11)
            .assuming_remote_cost(2.0)
            .assuming_memory_follows(follows);
        let mut places: Vec<usize> = Vec::new();
        for period in 0..=4 {
            let threads = crowded_samples(keys, &places, |p, crowd| {
                1.0 / (crowd + load[layout.places()[p].node.expect("a core")])
            });
            let mut input = input(period, &threads, period == 4);
            input.waiting = waiting(period);
            places = policy.decide(&input).place;
        }
        places
    }

    #[test]
    fn where_memory_follows_threads_cross_to_a_node_the_load_left_idle() {
        // Three nodes of one core: round robin puts thread 1 on node 0,
        // beside another program weighing 4 (a fifth of the core), and
        // thread 2 on node 1; none is on node 2. Where memory stays, a node
        // the program does not hold is no destination; where it follows,
        // thread 1 crosses there at the NUMA tick.
        let layout = Layout::uniform(3, 1);
        let core: Vec<usize> = (0..3).map(|node| layout.cores_of(node).next().unwrap()).collect();
        let load = [4.0, 0.0, 0.0];
        let never = |_| None;
        assert_eq!(
            after_a_numa_tick(&layout, &[1, 2], &load, None, &never),
            vec![core[0], core[1]]
        );
        assert_eq!(
            after_a_numa_tick(&layout, &[1, 2], &load, Some(2.0), &never),
            vec![core[2], core[1]]
        );
        // Not for a program seen spinning, even once its waiting share has
        // fallen below the bound for crossing (6% in waiting code at first,
        // then none: its average is under 5% by the tick).
        let spun = |period| Some(if period == 0 { 0.06 } else { 0.0 });
        assert_eq!(
            after_a_numa_tick(&layout, &[1, 2], &load, Some(2.0), &spun),
            vec![core[0], core[1]]
        );
    }

    #[test]
    fn where_memory_follows_a_node_the_threads_left_loaded_is_no_destination_while_its_load_is_recent() {
        // Two nodes of one core, memory following after 2 s, a NUMA tick
        // every second (periods of 50 ms). Round robin puts threads 1 3 on
        // node 0 and 2 on node 1 beside another program weighing 9 (a tenth
        // of the core); thread 2 ends at 0.5 s, leaving node 1 empty, while
        // 1 and 3 share node 0's core. The crowd forgets node 1's load 5 s
        // after it last measured it, but a node the program holds none of
        // is believed idle only once its load was measured 10 s ago or
        // more: no thread goes there before, and one does at the first
        // tick after (as where the load left it).
        let layout = Layout::uniform(2, 1);
        let core: Vec<usize> = (0..2).map(|node| layout.cores_of(node).next().unwrap()).collect();
        let load = [0.0, 9.0];
        let cfg = LearnConfig {
            reset_on_exit: false,
            ..crowd_moves_without_zeta()
        };
        let mut policy = LearnPolicy::new(layout.clone(), cfg, 11)
            .assuming_remote_cost(2.0)
            .assuming_memory_follows(Some(2.0));
        let mut places: Vec<usize> = Vec::new();
        let mut there_at = None;
        for period in 0..=260 {
            let keys: &[ThreadKey] = if period < 10 { &[1, 2, 3] } else { &[1, 3] };
            if period == 10 {
                assert_eq!(places, vec![core[0], core[1], core[0]]);
                places.remove(1);
            }
            let threads = crowded_samples(keys, &places, |p, crowd| {
                1.0 / (crowd + load[layout.places()[p].node.expect("a core")])
            });
            places = policy.decide(&input(period, &threads, period % 20 == 4)).place;
            if there_at.is_none() && places.contains(&core[1]) && period >= 10 {
                there_at = Some(period as f64 * 0.05);
            }
        }
        let there_at = there_at.expect("a thread tries node 1 again");
        assert!((10.45..=11.45).contains(&there_at), "node 1 tried at {there_at} s");
    }

    #[test]
    fn where_memory_follows_only_a_sparser_node_costs_the_passing_remote_cost() {
        // Two nodes of one core. Threads 1 3 share node 0 with a load of 4
        // (a sixth each), thread 2 has node 1 beside a load of 1: a second
        // thread there would get a third of the core, which the full remote
        // cost of 2 halves below what thread 1 has; the passing one (1.2, 2 s
        // of memory following over 10 s) does not, and node 1 has fewer of
        // the program's threads per core: thread 1 crosses. With thread 4
        // on node 1 too, beside a load of 2 against 8 on node 0, a move
        // would pay as well, but node 1 is as crowded: nothing moves.
        let layout = Layout::uniform(2, 1);
        let core: Vec<usize> = (0..2).map(|node| layout.cores_of(node).next().unwrap()).collect();
        let never = |_| None;
        let three = [1, 2, 3];
        assert_eq!(
            after_a_numa_tick(&layout, &three, &[4.0, 1.0], None, &never),
            vec![core[0], core[1], core[0]]
        );
        assert_eq!(
            after_a_numa_tick(&layout, &three, &[4.0, 1.0], Some(2.0), &never),
            vec![core[1], core[1], core[0]]
        );
        let four = [1, 2, 3, 4];
        let stay = vec![core[0], core[1], core[0], core[1]];
        assert_eq!(after_a_numa_tick(&layout, &four, &[8.0, 2.0], Some(2.0), &never), stay);
    }

    /// Runs `periods` learner periods of three threads on one node of four
    /// cores where another program holds core 0 with weight 2: a thread's
    /// run share is 1 / (threads on its core + that core's load). Returns
    /// the number of moves and the last placement.
    fn loaded_core_game(moves: Moves, periods: u64) -> (usize, Vec<usize>) {
        loaded_core_game_waiting(moves, periods, None)
    }

    /// [`loaded_core_game`] with every period's waiting share `waiting`.
    fn loaded_core_game_waiting(moves: Moves, periods: u64, waiting: Option<f64>) -> (usize, Vec<usize>) {
        let (moved, places) = core_game(&[2.0, 0.0, 0.0, 0.0], moves, periods, |_| waiting);
        (moved.iter().sum(), places)
    }

    /// Three threads on one node whose cores carry another program's load
    /// `load` (one weight per core), under `moves` for `periods` periods: a
    /// thread's run share is 1 / (threads on its core + that core's load),
    /// 0.5 on the whole node, the program's waiting share
    /// `waiting(period)`. Returns the threads moved in each period and the
    /// last placement.
    fn core_game(
        load: &[f64],
        moves: Moves,
        periods: u64,
        waiting: impl Fn(u64) -> Option<f64>,
    ) -> (Vec<usize>, Vec<usize>) {
        let cfg = LearnConfig { moves, ..papers() };
        let cores = load.len();
        let mut policy = LearnPolicy::new(Layout::uniform(1, cores), cfg, 3);
        let keys = [1, 2, 3];
        let mut places: Vec<usize> = Vec::new();
        let mut moved = Vec::new();
        for period in 0..periods {
            let threads = crowded_samples(
                &keys,
                &places,
                |p, crowd| {
                    if p < cores { 1.0 / (crowd + load[p]) } else { 0.5 }
                },
            );
            let mut input = input(period, &threads, false);
            input.waiting = waiting(period);
            let decision = policy.decide(&input);
            moved.push(places.iter().zip(&decision.place).filter(|(a, b)| a != b).count());
            places = decision.place;
        }
        (moved, places)
    }

    /// Four threads that never sleep on three cores of one node, crowd
    /// moves, no guard: each core shares itself equally among its threads.
    /// A thread works its run share (`pooled`: the CPU time each works
    /// follows its share, as independent tasks do) or a round per round
    /// whatever its share (threads that meet at barriers). Returns each
    /// thread's CPU-seconds after `periods` of 50 ms.
    fn four_on_three(catch_up_s: f64, pooled: bool, periods: u64) -> Vec<f64> {
        let cfg = LearnConfig {
            moves: Moves::Crowd,
            crowd: CrowdConfig {
                catch_up_s,
                ..CrowdConfig::default()
            },
            ..papers()
        };
        let mut policy = LearnPolicy::new(Layout::uniform(1, 3), cfg, 5);
        let keys = [1, 2, 3, 4];
        let mut places: Vec<usize> = Vec::new();
        let mut ran = vec![0.0; keys.len()];
        for period in 0..periods {
            let mut threads = crowded_samples(&keys, &places, |_, crowd| 1.0 / crowd);
            for (thread, ran) in threads.iter_mut().zip(&mut ran) {
                thread.worked = if pooled {
                    thread.share
                } else {
                    thread.share.map(|_| 0.5)
                };
                *ran += thread.share.unwrap_or(0.0) * 0.05;
            }
            places = policy.decide(&input(period, &threads, false)).place;
        }
        ran
    }

    fn spread(ran: &[f64]) -> f64 {
        ran.iter().copied().fold(f64::MIN, f64::max) - ran.iter().copied().fold(f64::MAX, f64::min)
    }

    #[test]
    fn threads_that_pool_their_work_trade_places_until_each_has_run_as_much() {
        // Two threads doubled up on one core are a Nash equilibrium of
        // the crowd's game (a move gains nobody anything), so without
        // trades they stay behind for good: 10 s apart after 20 s.
        let held = four_on_three(0.0, true, 400);
        assert!(spread(&held) > 8.0, "{held:?}");
        // With trades the two behind take the free cores in turn: the
        // program gets as much CPU (3 cores' worth) and no thread is left
        // behind by more than about the trade's gap.
        let traded = four_on_three(1.0, true, 400);
        assert!(spread(&traded) < 1.5, "{traded:?}");
        let total = |ran: &[f64]| ran.iter().sum::<f64>();
        assert!(total(&traded) > 0.97 * total(&held), "{traded:?} {held:?}");
    }

    /// Six threads that pool their work on two nodes of two cores, node
    /// 1's cores loaded by another program weighing 9 (a tenth of a core
    /// to a thread alone there), memory staying where it is (a remote cost
    /// of 2), 400 periods; round robin starts threads 1 3 5 on node 0 and
    /// 2 4 6 on node 1, and thread 5 ends at `ends_at` if given. Returns,
    /// per period, how many threads are away from the node round robin
    /// started them on.
    fn away_with_a_loaded_node(ends_at: Option<u64>) -> Vec<usize> {
        let cfg = LearnConfig {
            moves: Moves::Crowd,
            ..papers()
        };
        let layout = Layout::uniform(2, 2);
        let mut policy = LearnPolicy::new(layout.clone(), cfg, 5).assuming_remote_cost(2.0);
        let load = |place: usize| {
            if layout.places()[place].node == Some(1) {
                9.0
            } else {
                0.0
            }
        };
        let mut keys = vec![1, 2, 3, 4, 5, 6];
        let mut places: Vec<usize> = Vec::new();
        let mut started_on: Vec<usize> = Vec::new();
        let mut away = Vec::new();
        for period in 0..400 {
            if Some(period) == ends_at {
                let gone = keys.iter().position(|&key| key == 5).expect("thread 5 runs");
                assert_eq!(layout.places()[places[gone]].node, Some(0), "thread 5 works on node 0");
                keys.remove(gone);
                places.remove(gone);
                started_on.remove(gone);
            }
            let mut threads = crowded_samples(&keys, &places, |p, crowd| 1.0 / (crowd + load(p)));
            for thread in &mut threads {
                thread.worked = thread.share;
            }
            places = policy.decide(&input(period, &threads, false)).place;
            let node = |place: usize| layout.places()[place].node.expect("a core");
            if started_on.is_empty() {
                started_on = places.iter().map(|&place| node(place)).collect();
            }
            away.push(
                places
                    .iter()
                    .zip(&started_on)
                    .filter(|&(&place, &start)| node(place) != start)
                    .count(),
            );
        }
        away
    }

    #[test]
    fn once_a_working_thread_ended_the_threads_behind_trade_across_nodes_away_from_their_memory() {
        // Threads 2 4 6 start on node 1, a fifth of a core or less each,
        // and fall behind their siblings on node 0. Trading places with one
        // ahead there would take both away from their memory (twice as
        // slow): no trade crosses nodes while every thread still works.
        assert!(away_with_a_loaded_node(None).iter().all(|&away| away == 0));
        // Once thread 5 has ended, the others have work of their own and
        // the run ends with the last: the place ahead runs the one behind
        // faster even at the remote cost, and they trade across nodes.
        let away = away_with_a_loaded_node(Some(200));
        assert!(away[..200].iter().all(|&away| away == 0), "{:?}", &away[..200]);
        assert!(away[200..].iter().any(|&away| away >= 2), "{:?}", &away[200..]);
    }

    #[test]
    fn threads_that_meet_at_barriers_do_not_trade() {
        // A thread at a barrier works a round per round whatever its run
        // share: the threads do not pool, and the trades leave them alone.
        assert_eq!(four_on_three(1.0, false, 400), four_on_three(0.0, false, 400));
    }

    /// Six threads on one node of four cores, another program of weight 2
    /// on core 3 in the program's scheduling group (a thread's run share
    /// is 1 / (threads on its core + 2 there, + 0 elsewhere)), crowd moves,
    /// no guard, 100 periods: far fewer than `Pooling` needs. Every
    /// period's waiting share is `waiting`, every thread's grain `grain_s`
    /// and the others' scheduler slice `wake_slice_s` (`Some`: they run in
    /// a group apart). Returns the program's CPUs (its threads' shares
    /// summed) in the last period and how many threads ended on core 3.
    fn six_beside_a_load(waiting: Option<f64>, grain_s: Option<f64>, wake_slice_s: Option<f64>) -> (f64, usize) {
        let cfg = LearnConfig {
            moves: Moves::Crowd,
            ..papers()
        };
        let mut policy = LearnPolicy::new(Layout::uniform(1, 4), cfg, 7);
        let keys = [1, 2, 3, 4, 5, 6];
        let load = [0.0, 0.0, 0.0, 2.0];
        let mut places: Vec<usize> = Vec::new();
        let mut cpus = 0.0;
        for period in 0..100 {
            let mut threads = crowded_samples(&keys, &places, |p, crowd| 1.0 / (crowd + load[p]));
            for thread in &mut threads {
                thread.grain_s = grain_s;
            }
            cpus = threads.iter().filter_map(|t| t.share).sum();
            let mut input = input(period, &threads, false);
            input.waiting = waiting;
            input.wake_slice_s = wake_slice_s;
            places = policy.decide(&input).place;
        }
        (cpus, places.iter().filter(|&&p| p == 3).count())
    }

    #[test]
    fn threads_that_never_sleep_crowd_a_load_in_their_group_where_the_program_gains() {
        // Round-robin puts one thread beside the load (a third of core 3)
        // and two on each of cores 0 and 1. A second thread on core 3 is
        // no thread's best (a quarter there, a half where it is), so
        // selfish moves leave the program 3 1/3 CPUs. Threads that never
        // sleep wait for nobody, so the program's CPU counts: two on core
        // 3 take half of it, the program 3.5 CPUs (a third would add a
        // tenth of a core, less than the margin).
        let (cpus, on_loaded) = six_beside_a_load(Some(0.0), None, None);
        assert_eq!(on_loaded, 2, "{cpus} CPUs");
        assert!((cpus - 3.5).abs() < 1e-9, "{cpus}");
        // Threads that sleep (at barriers, for queues) may wait for the one
        // sent there; a program whose waiting code cannot be told may spin;
        // in a group apart the load's share is not the crowd's weight.
        for (waiting, grain_s, slice) in [
            (Some(0.0), Some(0.002), None),
            (None, None, None),
            (Some(0.0), None, Some(0.003)),
        ] {
            let (cpus, on_loaded) = six_beside_a_load(waiting, grain_s, slice);
            assert_eq!(on_loaded, 1, "waiting {waiting:?}, grain {grain_s:?}, slice {slice:?}");
            assert!((cpus - 10.0 / 3.0).abs() < 1e-9, "{cpus}");
        }
    }

    #[test]
    fn crowd_moves_leave_the_loaded_core_and_then_hardly_move() {
        // Round-robin puts one thread on the loaded core (a third of it);
        // it moves to the empty core. Then nobody moves: the loaded core,
        // forgotten after 5 s, promises a thread alone on its core nothing
        // it has not got.
        let (moved, places) = loaded_core_game(Moves::Crowd, 1000);
        assert!(!places.contains(&0), "the loaded core is left: {places:?}");
        assert_eq!(moved, 1, "{moved} moves in 1000 periods: {places:?}");
        // The papers' automata keep drawing.
        let (drawn, _) = loaded_core_game(Moves::Drawn, 1000);
        assert!(drawn > 5 * moved, "drawn {drawn} moves, crowd {moved}");
    }

    #[test]
    fn a_main_thread_asleep_in_join_leaves_its_core_to_the_workers() {
        // One node of cores 0 and 1, another program's thread on core 0.
        // Round robin puts workers 1 and 3 on core 0 (a third each) and the
        // main thread 2, asleep in join (hardly runnable: no share), on
        // core 1. Counted as a crowd of one, it made core 1 look taken,
        // and both workers stayed beside the load. Once it has slept 9 of
        // 10 periods a worker moves to core 1: the sleeper takes nothing
        // there. A thread that wakes every few periods (at a barrier)
        // still counts.
        let cfg = LearnConfig {
            moves: Moves::Crowd,
            ..papers()
        };
        let sample = |key, share: Option<f64>| ThreadSample {
            key,
            speed: share,
            share,
            grain_s: None,
            worked: None,
        };
        let third = Some(1.0 / 3.0);
        // Returns the period at which a worker joined thread 2 on core 1.
        let joined = |wakes_every: Option<u64>| {
            let mut policy = LearnPolicy::new(Layout::uniform(1, 2), cfg, 5);
            let first = policy.decide(&input(0, &[sample(1, None), sample(2, None), sample(3, None)], false));
            assert_eq!(first.place, vec![0, 1, 0], "round robin");
            (1..40).find(|&period| {
                let awake = wakes_every.is_some_and(|every| period % every == 0);
                let main = sample(2, awake.then_some(1.0));
                let next = policy.decide(&input(period, &[sample(1, third), main, sample(3, third)], false));
                assert_eq!(next.place[1], 1, "thread 2 stays");
                next.place.iter().filter(|&&p| p == 1).count() == 2
            })
        };
        assert_eq!(joined(None), Some(9), "once asleep in periods 1 to 9");
        assert_eq!(
            joined(Some(4)),
            None,
            "a thread that wakes every 4 periods holds its core"
        );
    }

    #[test]
    fn threads_seen_spinning_hold_their_round_robin_places() {
        // The same game, but the threads spend 60% of their CPU time in
        // waiting code: shares no longer tell crowding, so with crowd moves
        // configured no thread moves from its round-robin start (the one
        // on the loaded core included), while the papers' automata keep
        // drawing.
        let (held, places) = loaded_core_game_waiting(Moves::Crowd, 1000, Some(0.6));
        assert_eq!(held, 0, "{held} moves: {places:?}");
        assert_eq!(places, vec![0, 1, 2], "the round-robin start");
        let (drawn, _) = loaded_core_game_waiting(Moves::Drawn, 1000, Some(0.6));
        assert!(drawn > 50, "the automata draw: {drawn} moves");
        // Below `blind_waiting` (0.25) the crowd moves stay.
        let (quiet, _) = loaded_core_game_waiting(Moves::Crowd, 1000, Some(0.1));
        assert_eq!(quiet, 1);
    }

    #[test]
    fn threads_seen_spinning_hold_their_places_where_they_outnumber_the_cores() {
        // Three spinning threads on two cores: the round-robin start puts
        // two siblings on one core, as a fixed round-robin pin does; the
        // threads hold it (the guard compares it with Linux), where the
        // papers' automata keep drawing.
        let (moves, places) = core_game(&[0.0, 0.0], Moves::Crowd, 400, |_| Some(0.6));
        assert_eq!(moves.iter().sum::<usize>(), 0, "held: {places:?}");
        assert_eq!(places, vec![0, 1, 0], "the round-robin start");
        let (drawn, _) = core_game(&[0.0, 0.0], Moves::Drawn, 400, |_| Some(0.6));
        assert!(drawn.iter().sum::<usize>() > 20, "the automata draw");
    }

    #[test]
    fn threads_that_stop_spinning_get_crowd_moves_back() {
        // Three threads on four cores, the first loaded twice over: while
        // they spin (60% of their time in waiting code) they hold their
        // round-robin start, the one on the loaded core included; once
        // they sleep at their barriers (no waiting) and the waiting
        // share's moving average (about a second) falls below
        // `blind_waiting`, crowd moves return and that thread leaves.
        let (moves, places) = core_game(&[2.0, 0.0, 0.0, 0.0], Moves::Crowd, 400, |period| {
            Some(if period < 100 { 0.6 } else { 0.0 })
        });
        let early: usize = moves[..100].iter().sum();
        let late: usize = moves[100..].iter().sum();
        assert_eq!(early, 0, "spinning: held");
        assert_eq!(late, 1, "sleeping: one crowd move off the loaded core, {places:?}");
        assert!(!places.contains(&0));
    }

    #[test]
    fn threads_that_start_spinning_go_back_to_their_round_robin_start() {
        // The same machine: while the threads sleep at their barriers the
        // one on the loaded core leaves it by a crowd move; once they spin
        // (the waiting share's average above `blind_waiting`) they hold
        // their round-robin start, which takes that thread back: run shares
        // did not tell crowding when it moved.
        let (moves, places) = core_game(&[2.0, 0.0, 0.0, 0.0], Moves::Crowd, 400, |period| {
            Some(if period < 100 { 0.0 } else { 0.6 })
        });
        let early: usize = moves[..100].iter().sum();
        let late: usize = moves[100..].iter().sum();
        assert_eq!(early, 1, "sleeping: one crowd move off the loaded core");
        assert_eq!(late, 1, "spinning: back to the start, then held");
        assert_eq!(places, vec![0, 1, 2], "the round-robin start");
    }

    /// Linux first, the probe at once; at the end of Linux's window the
    /// target says the threads ran on node 1 (cores 3 and 4), where their
    /// memory is: thread k (key k + 1) on `linux[k]` with run share
    /// `share[k]` in every period, its speed too. Returns the learner's
    /// placements over 40 periods.
    fn learner_after_linux_on_node_1(moves: Moves, linux: &[Option<usize>], share: &[f64]) -> Vec<Vec<usize>> {
        learner_after_linux(moves, linux, share, None)
    }

    /// The same, the threads spending `waiting` of their sampled CPU time
    /// in waiting code (spinning) in every period.
    fn learner_after_linux(
        moves: Moves,
        linux: &[Option<usize>],
        share: &[f64],
        waiting: Option<f64>,
    ) -> Vec<Vec<usize>> {
        let share: Vec<Option<f64>> = share.iter().copied().map(Some).collect();
        learner_after_linux_asleep(moves, linux, &share, waiting, 2)
    }

    /// The same, a thread without a share hardly runnable (asleep after
    /// nine such periods: give Linux's windows `window` periods).
    fn learner_after_linux_asleep(
        moves: Moves,
        linux: &[Option<usize>],
        share: &[Option<f64>],
        waiting: Option<f64>,
        window: u32,
    ) -> Vec<Vec<usize>> {
        learner_after_linux_policy(moves, linux, share, waiting, window, 80).0
    }

    /// The same over `periods` periods, with the learner as it is then.
    fn learner_after_linux_policy(
        moves: Moves,
        linux: &[Option<usize>],
        share: &[Option<f64>],
        waiting: Option<f64>,
        window: u32,
        periods: u64,
    ) -> (Vec<Vec<usize>>, LearnPolicy) {
        let cfg = LearnConfig {
            moves,
            ..probe_at_once(window)
        };
        let layout = Layout::uniform(2, 2); // node 0: cores 0 1; node 1: 3 4
        let policy = LearnPolicy::new(layout, cfg, 1);
        run_after_linux(policy, linux, share, waiting, None, periods)
    }

    /// The default learner with Linux's windows of `window` periods, its
    /// first probe at once, no reset when a thread ends.
    fn probe_at_once(window: u32) -> LearnConfig {
        LearnConfig {
            guard: GuardConfig {
                assumed_loss: 0.0,
                window,
                ..GuardConfig::default()
            },
            reset_on_exit: false,
            ..LearnConfig::default()
        }
    }

    /// `policy` over `periods` periods as above, the target saying that
    /// other programs ran `others` of the CPUs' time in every period.
    fn run_after_linux(
        policy: LearnPolicy,
        linux: &[Option<usize>],
        share: &[Option<f64>],
        waiting: Option<f64>,
        others: Option<f64>,
        periods: u64,
    ) -> (Vec<Vec<usize>>, LearnPolicy) {
        let told = Told {
            waiting,
            others,
            ..Told::default()
        };
        let (learner, policy) = run_after_linux_told(policy, linux, share, periods, &told);
        (learner.into_iter().map(|(_, place)| place).collect(), policy)
    }

    /// What the target tells in every period's input besides the threads'
    /// samples (and Linux's cores when asked).
    #[derive(Default)]
    struct Told {
        waiting: Option<f64>,
        others: Option<f64>,
        /// Told from period `others_by_core_from` on.
        others_by_core: Option<Vec<Option<f64>>>,
        others_by_core_from: u64,
        wake_slice_s: Option<f64>,
        /// Linux's cores from the period given on, in place of `linux`.
        linux_moved: Option<(u64, Vec<Option<usize>>)>,
        /// Every thread's grain (how long it works between two waits).
        grain_s: Option<f64>,
        /// The program's progress in a period, from the places decided
        /// for it (Linux's: every thread on the whole machine).
        progress: Option<fn(&[usize]) -> f64>,
    }

    /// The same, the target telling `told`; each of the learner's
    /// placements with its period.
    fn run_after_linux_told(
        mut policy: LearnPolicy,
        linux: &[Option<usize>],
        share: &[Option<f64>],
        periods: u64,
        told: &Told,
    ) -> (Vec<(u64, Vec<usize>)>, LearnPolicy) {
        let whole = policy.layout().whole();
        let mut learner = Vec::new();
        let mut last_place: Option<Vec<usize>> = None;
        for period in 0..periods {
            let shares: Vec<ThreadSample> = (1..=linux.len() as u64)
                .zip(share)
                .map(|(key, &share)| ThreadSample {
                    key,
                    speed: share,
                    share,
                    grain_s: told.grain_s,
                    worked: None,
                })
                .collect();
            let wants = policy.wants_cores();
            let mut input = input(period, &shares, false);
            input.waiting = told.waiting;
            input.others = told.others;
            input.others_by_core = told
                .others_by_core
                .as_deref()
                .filter(|_| period >= told.others_by_core_from);
            input.wake_slice_s = told.wake_slice_s;
            input.progress = told
                .progress
                .zip(last_place.as_deref())
                .map(|(progress, place)| progress(place));
            if wants {
                input.cores = Some(match &told.linux_moved {
                    Some((from, moved)) if period >= *from => moved,
                    _ => linux,
                });
            }
            let decision = policy.decide(&input);
            if policy.guard().arm() == Arm::Learn && !decision.place.contains(&whole) {
                learner.push((period, decision.place.clone()));
            }
            last_place = Some(decision.place);
        }
        (learner, policy)
    }

    /// The learner's placements after each of Linux's windows, Linux
    /// putting the four threads on node 1 (cores 3 and 4) until period
    /// 40 and on node 0 (cores 0 and 1) after it, every thread running
    /// all of its CPU and never waiting (its waiting share 0, no grain):
    /// the probes tie, Linux stays champion and the learner probes at
    /// periods 2, 8, 138 and 268. The target tells `wake_slice_s` (the
    /// other programs in a scheduling group apart) and the threads'
    /// `waiting` share.
    fn first_places_after_linux_moved(wake_slice_s: Option<f64>, waiting: f64) -> Vec<Vec<usize>> {
        let policy = LearnPolicy::new(Layout::uniform(2, 2), probe_at_once(2), 1);
        let told = Told {
            waiting: Some(waiting),
            wake_slice_s,
            linux_moved: Some((40, vec![Some(0), Some(1), Some(0), Some(1)])),
            ..Told::default()
        };
        let linux = [Some(3), Some(4), Some(3), Some(4)];
        let (learner, _) = run_after_linux_told(policy, &linux, &[Some(1.0); 4], 300, &told);
        // Each probe's first period: the period before it was Linux's.
        let mut firsts = Vec::new();
        let mut last_period = None;
        for (period, place) in learner {
            if period > 40 && last_period != period.checked_sub(1) {
                firsts.push(place);
            }
            last_period = Some(period);
        }
        firsts
    }

    /// The threads per node of the learner's first placement, eight
    /// threads that wait between rounds of 1 ms on two nodes of two cores
    /// (node 0: cores 0 and 1; node 1: 3 and 4), Linux having five on node
    /// 0 and three on node 1, other programs' load in a group apart taking
    /// `others_by_core` of each core (place order).
    fn first_probe_per_node(others_by_core: Vec<Option<f64>>) -> Vec<usize> {
        let policy = LearnPolicy::new(Layout::uniform(2, 2), probe_at_once(2), 1);
        let linux = [0, 1, 0, 1, 0, 3, 4, 3].map(Some);
        let told = Told {
            others: Some(0.3),
            others_by_core: Some(others_by_core),
            wake_slice_s: Some(0.003),
            grain_s: Some(0.001),
            ..Told::default()
        };
        let (learner, _) = run_after_linux_told(policy, &linux, &[Some(0.5); 8], 20, &told);
        let (_, first) = learner.first().expect("the learner probes");
        vec![
            first.iter().filter(|&&place| place < 2).count(),
            first.iter().filter(|&&place| place == 3 || place == 4).count(),
        ]
    }

    #[test]
    fn threads_that_wait_start_on_the_pin_s_node_counts_beside_a_load_in_a_group_apart_on_every_node() {
        // The load takes half of every core: Linux's 5 and 3 answer
        // nothing the threads need, and the most crowded core gates every
        // round (sim, 4x8 `barrier` A.2: 71.5 -> 66.8 s).
        let even = vec![Some(0.5), Some(0.5), None, Some(0.5), Some(0.5), None, None];
        assert_eq!(first_probe_per_node(even), vec![4, 4]);
        // The load on node 0 only: Linux's counts answer it, and stay.
        let on_node_0 = vec![Some(0.5), Some(0.5), None, Some(0.0), Some(0.0), None, None];
        assert_eq!(first_probe_per_node(on_node_0), vec![5, 3]);
    }

    /// Threads on node 0 (cores 0 and 1) in each of the learner's probes
    /// (its first placement after a window of Linux's), and whether the
    /// learner leads at the end: eight threads that wait between rounds of
    /// 1 ms on two nodes of two cores, Linux's on `linux`, other programs'
    /// load in a group apart on node 0 or (`even`) on both, the program
    /// progressing as `progress` says (10 a period under Linux).
    fn probes_on_node_0(linux: [usize; 8], even: bool, progress: fn(&[usize]) -> f64) -> (Vec<usize>, bool) {
        let policy = LearnPolicy::new(Layout::uniform(2, 2), probe_at_once(2), 1);
        assert_eq!(policy.layout().whole(), 6, "on_node_0 tells Linux's placements by it");
        let told = Told {
            others: Some(0.3),
            others_by_core: Some(vec![
                Some(0.5),
                Some(0.5),
                None,
                Some(if even { 0.5 } else { 0.0 }),
                Some(if even { 0.5 } else { 0.0 }),
                None,
                None,
            ]),
            wake_slice_s: Some(0.003),
            grain_s: Some(0.001),
            progress: Some(progress),
            ..Told::default()
        };
        let (placements, policy) = run_after_linux_told(policy, &linux.map(Some), &[Some(0.5); 8], 600, &told);
        let mut probes = Vec::new();
        let mut last_period = None;
        for (period, place) in placements {
            if last_period != period.checked_sub(1) {
                probes.push(place.iter().filter(|&&place| place < 2).count());
            }
            last_period = Some(period);
        }
        (probes, policy.guard().champion() == Arm::Learn)
    }

    /// Linux's placements carry every thread on the whole machine (place
    /// 6); the learner's progress by its threads on node 0.
    fn on_node_0(place: &[usize]) -> Option<usize> {
        (!place.contains(&6)).then(|| place.iter().filter(|&&place| place < 2).count())
    }

    #[test]
    fn a_probe_from_linux_s_node_counts_that_lost_is_followed_by_one_from_the_pin_s_and_the_better_start_is_kept() {
        // Linux's 3 and 5 threads are not crowding (the first probe starts
        // there) and lose; the pin's 4 and 4 win (sim, 8x32 `barrier` D,
        // the load on one node: Linux's counts lost by 17% and were held
        // for 20 s, the pin's won from then on).
        let (probes, leads) = probes_on_node_0([0, 1, 0, 3, 4, 3, 4, 3], false, |place| match on_node_0(place) {
            None => 10.0,
            Some(4) => 12.0,
            Some(_) => 8.0,
        });
        assert_eq!(probes[0], 3, "{probes:?}");
        assert_eq!(probes[1], 4, "{probes:?}");
        assert!(leads, "{probes:?}");
        // The load on both nodes: the first probe starts on the pin's
        // counts and loses narrowly, the probe from Linux's counts after
        // it by more; the next go back to the pin's (sim, 4x8 `barrier` D:
        // a first probe off the nodes Linux crowded lost in the program's
        // start-up, 72.9 -> 68.8 s).
        let (probes, _) = probes_on_node_0([0, 1, 0, 3, 4, 3, 4, 3], true, |place| match on_node_0(place) {
            None => 10.0,
            Some(4) => 9.5,
            Some(_) => 7.0,
        });
        assert!(probes.len() >= 3, "{probes:?}");
        assert_eq!(probes[..2], [4, 3], "{probes:?}");
        assert!(probes[2..].iter().all(|&on_0| on_0 == 4), "{probes:?}");
    }

    #[test]
    fn threads_that_never_wait_start_each_probe_where_linux_has_them_now_beside_a_load_in_a_group_apart() {
        // Linux stays champion (the probes tie) and moved the threads to
        // node 0 at period 40: a program whose threads never wait starts
        // every later probe there, where their memory and Linux's
        // balancing put them, not on the learner's last placement on node
        // 1 (sim, 8x32 `independent` D, the load in its own session:
        // 0.965 -> 0.933 of Linux's time).
        let never_waiting = first_places_after_linux_moved(Some(0.003), 0.0);
        assert_eq!(never_waiting.len(), 2, "the learner probes twice after period 40");
        for place in &never_waiting {
            assert!(place.iter().all(|&core| core < 2), "on node 0: {never_waiting:?}");
        }
        // Threads that wait (here: spinning in waiting code) keep the
        // learner's own placement: what it learned is theirs.
        let waiting = first_places_after_linux_moved(Some(0.003), 0.5);
        assert_eq!(waiting.len(), 2);
        assert!(
            waiting.iter().any(|place| place.iter().any(|&core| core >= 2)),
            "{waiting:?}"
        );
    }

    #[test]
    fn a_node_is_crowded_at_one_and_a_half_times_the_mean_per_core_or_a_quarter_above_it_beside_an_empty_one() {
        use NodeCrowd::{Crowded, Even, Short};
        // 40 threads on one node of two with 10 cores each.
        let all_on_1 = vec![Some(1); 40];
        let awake = vec![true; 40];
        assert_eq!(
            crowded_nodes(&all_on_1, &awake, &[10, 10], CROWDED_NODE_FACTOR),
            Some(vec![Short, Crowded])
        );
        // 28 against 12: 1.4 times the mean, not crowded.
        let split: Vec<Option<usize>> = (0..40).map(|i| Some(usize::from(i >= 12))).collect();
        assert_eq!(crowded_nodes(&split, &awake, &[10, 10], CROWDED_NODE_FACTOR), None);
        // Asleep threads count nowhere; one node is never crowded.
        let mut asleep = [false; 40];
        asleep[..20].fill(true);
        let half_awake: Vec<bool> = asleep.iter().map(|a| !a).collect();
        let mixed: Vec<Option<usize>> = (0..40).map(|i| Some(usize::from(i >= 20))).collect();
        assert_eq!(
            crowded_nodes(&mixed, &half_awake, &[10, 10], CROWDED_NODE_FACTOR),
            Some(vec![Short, Crowded])
        );
        assert_eq!(
            crowded_nodes(&vec![Some(0); 40], &awake, &[20], CROWDED_NODE_FACTOR),
            None
        );
        // Four nodes of 5 cores, none left nearly empty: 14 against 8 is
        // 1.4 times the mean, not crowded.
        let on_nodes = |counts: &[usize]| -> Vec<Option<usize>> {
            counts
                .iter()
                .enumerate()
                .flat_map(|(node, &n)| vec![Some(node); n])
                .collect()
        };
        let four = [5; 4];
        assert_eq!(
            crowded_nodes(&on_nodes(&[8, 14, 9, 9]), &awake, &four, CROWDED_NODE_FACTOR),
            None
        );
        // Linux kept the program off node 0 (another program's load was
        // there): every node with 1.25 times the mean is crowded, though
        // none holds 1.5 times it; as few as half the mean counts as empty,
        // and a node above the mean by less is even.
        assert_eq!(
            crowded_nodes(&on_nodes(&[0, 14, 13, 13]), &awake, &four, CROWDED_NODE_FACTOR),
            Some(vec![Short, Crowded, Crowded, Crowded])
        );
        assert_eq!(
            crowded_nodes(&on_nodes(&[5, 13, 12, 10]), &awake, &four, CROWDED_NODE_FACTOR),
            Some(vec![Short, Crowded, Even, Even])
        );
        assert_eq!(
            crowded_nodes(&on_nodes(&[6, 12, 11, 11]), &awake, &four, CROWDED_NODE_FACTOR),
            None
        );
        // Three nodes: the one in the middle of the mean is even.
        let three: Vec<Option<usize>> = [vec![Some(0); 2], vec![Some(1); 7], vec![Some(2); 12]].concat();
        assert_eq!(
            crowded_nodes(&three, &[true; 21], &[4, 4, 4], CROWDED_NODE_FACTOR),
            Some(vec![Short, Even, Crowded])
        );
    }

    #[test]
    fn the_learner_starts_on_the_node_where_linux_had_the_threads() {
        // Each thread alone on its core: the learner's first period keeps
        // them on node 1, round-robin over its cores (a plain round-robin
        // start would take them to node 0), with either kind of moves;
        // crowd moves keep them there.
        let linux = [Some(4), Some(3)];
        for moves in [Moves::Drawn, Moves::Crowd] {
            let learner = learner_after_linux_on_node_1(moves, &linux, &[1.0, 1.0]);
            assert!(learner.len() >= 2, "{moves:?}: the learner had its window: {learner:?}");
            assert_eq!(learner[0], vec![3, 4], "{moves:?}: node 1's cores round-robin");
        }
        let learner = learner_after_linux_on_node_1(Moves::Crowd, &linux, &[1.0, 1.0]);
        assert!(
            learner.iter().flatten().all(|&place| place == 3 || place == 4),
            "{learner:?}"
        );
    }

    #[test]
    fn threads_linux_crowded_on_one_node_leave_it_and_come_back_when_that_loses() {
        // Two threads share core 4 (half of it each), the third is alone on
        // core 3; node 0 holds none of them. With crowd moves the learner's
        // first probe takes the two off node 1, a core each; the papers'
        // automata keep them on node 1.
        let linux = [Some(4), Some(4), Some(3)];
        let share = [0.5, 0.5, 1.0];
        let on_node_0 = |places: &[usize]| places.iter().filter(|&&p| p < 2).count();
        let crowd = learner_after_linux_on_node_1(Moves::Crowd, &linux, &share);
        assert_eq!(crowd[0], vec![0, 1, 3], "a core each, two on node 0: {crowd:?}");
        let drawn = learner_after_linux_on_node_1(Moves::Drawn, &linux, &share);
        assert_eq!(on_node_0(&drawn[0]), 0, "{drawn:?}");
        // Every period measures the same (the shares above), so the probe
        // does not beat Linux: the next probe starts on Linux's node again.
        let later: Vec<&Vec<usize>> = crowd.iter().skip_while(|places| on_node_0(places) > 0).collect();
        assert!(!later.is_empty(), "a later probe: {crowd:?}");
        assert!(later.iter().all(|places| on_node_0(places) == 0), "{crowd:?}");
    }

    #[test]
    fn spinning_threads_linux_kept_off_a_node_start_as_many_there_as_the_pin_puts() {
        // Four threads spinning half their time, two a core on node 1,
        // each measuring all of its core (spinning counts as running): the
        // round-robin pin puts two on each node. The first two (in key
        // order) stay on Linux's node, the others go to node 0's cores.
        let linux = [Some(3), Some(4), Some(3), Some(4)];
        let share = [1.0; 4];
        let spinning = learner_after_linux(Moves::Crowd, &linux, &share, Some(0.5));
        assert_eq!(spinning[0], vec![3, 4, 0, 1], "{spinning:?}");
        // Working threads measuring the same, where the waiting code cannot
        // be told: the crowd's selfish judgement, by which nobody gains by
        // leaving.
        let working = learner_after_linux(Moves::Crowd, &linux, &share, None);
        assert!(working[0].iter().all(|&place| place == 3 || place == 4), "{working:?}");
        // Where it can, none waits and none sleeps: they pool their work,
        // and the program gains node 0's free cores.
        let pooling = learner_after_linux(Moves::Crowd, &linux, &share, Some(0.0));
        assert_eq!(pooling[0].iter().filter(|&&place| place < 2).count(), 2, "{pooling:?}");
        // Spinning, spread by Linux already: they start where Linux had them.
        let even = learner_after_linux(Moves::Crowd, &[Some(0), Some(3), Some(1), Some(4)], &share, Some(0.5));
        assert_eq!(even[0], vec![0, 3, 1, 4], "{even:?}");
    }

    #[test]
    fn spinning_threads_linux_keeps_crowding_on_cpus_of_their_own_start_every_probe_spread_as_the_pin() {
        // Four spinning threads Linux keeps two a core on node 1, window
        // after window; the spread's first probe ties with Linux, so Linux
        // stays champion. Where no other program runs on the program's
        // CPUs, the learner's later probes start spread as the pin again,
        // not held on Linux's crowded node: a first probe made while a load
        // sat on node 0 says little of the run after it left. Beside
        // another program's load, they hold the places they went back to
        // (Linux's nodes): an uneven count may answer that load.
        let linux = [Some(3), Some(4), Some(3), Some(4)];
        let share = [Some(1.0); 4];
        let probes = |others: Option<f64>| {
            let policy = LearnPolicy::new(Layout::uniform(2, 2), probe_at_once(2), 1);
            let (learner, policy) = run_after_linux(policy, &linux, &share, Some(0.5), others, 200);
            assert_eq!(policy.guard().champion(), Arm::Os);
            assert!(learner.len() > 4, "more than two probes: {learner:?}");
            learner
                .iter()
                .map(|place| place.iter().filter(|&&core| core < 2).count())
                .collect::<Vec<usize>>()
        };
        let alone = probes(Some(0.0));
        assert!(alone.iter().all(|&on_node_0| on_node_0 == 2), "{alone:?}");
        let beside_a_load = probes(Some(0.5));
        assert_eq!(beside_a_load[0], 2, "the first probe spreads: {beside_a_load:?}");
        assert_eq!(
            *beside_a_load.last().expect("probes"),
            0,
            "then Linux's node: {beside_a_load:?}"
        );
    }

    #[test]
    fn spinning_threads_beside_a_load_in_their_own_group_double_up_on_the_cores_it_leaves_free() {
        // Six spinning threads on one node of four cores: the round-robin
        // pin doubles them up on cores 0 and 1. Another program runs on
        // cores 0 and 1 (60% of each), none on 2 and 3. Where it runs in the
        // program's scheduling group, the learner deals the threads to the
        // free cores first: 2 and 3 hold two each, the loaded ones one.
        // Where it runs in a group apart (Linux's slice told), or the target
        // cannot tell each core's share, the pin's places stay.
        let linux = [0, 1, 2, 3, 0, 1].map(Some);
        let share = [Some(0.5); 6];
        let by_core: Vec<Option<f64>> = vec![Some(0.6), Some(0.6), Some(0.0), Some(0.0), None];
        let probes = |wake_slice_s: Option<f64>, by_core: Option<&[Option<f64>]>, from: u64| {
            let policy = LearnPolicy::new(Layout::uniform(1, 4), probe_at_once(2), 1);
            assert_eq!(
                policy.layout().places().len(),
                by_core.map_or(5, <[_]>::len),
                "four cores, the whole"
            );
            let told = Told {
                waiting: Some(0.5),
                others: Some(0.3),
                others_by_core: by_core.map(<[_]>::to_vec),
                others_by_core_from: from,
                wake_slice_s,
                ..Told::default()
            };
            let (learner, _) = run_after_linux_told(policy, &linux, &share, 200, &told);
            let learner: Vec<Vec<usize>> = learner.into_iter().map(|(_, place)| place).collect();
            assert!(learner.len() > 4, "more than two probes: {learner:?}");
            let per_core = |placed: &Vec<usize>| {
                (0..4)
                    .map(|core| placed.iter().filter(|&&place| place == core).count())
                    .collect()
            };
            (per_core(&learner[0]), per_core(learner.last().expect("probes")))
        };
        let (pin, dealt) = (vec![2, 2, 1, 1], vec![1, 1, 2, 2]);
        assert_eq!(
            probes(None, Some(&by_core), 0),
            (dealt.clone(), dealt.clone()),
            "from the first probe"
        );
        // The load comes once the learner has held the pin's places a while:
        // its next probe deals them again.
        assert_eq!(
            probes(None, Some(&by_core), 40),
            (pin.clone(), dealt.clone()),
            "the load comes"
        );
        assert_eq!(
            probes(Some(1.5e-3), Some(&by_core), 0),
            (pin.clone(), pin.clone()),
            "a group apart"
        );
        assert_eq!(probes(None, None, 0), (pin.clone(), pin.clone()), "shares unknown");
        // A share of 5% or less is noise: nothing moves.
        let noise: Vec<Option<f64>> = vec![Some(0.04), Some(0.05), Some(0.0), Some(0.0), None];
        assert_eq!(probes(None, Some(&noise), 0), (pin.clone(), pin), "noise");
    }

    #[test]
    fn threads_asleep_in_linux_s_window_start_as_many_on_each_node_as_the_pin_puts() {
        // Linux put four threads on node 1's two cores; two of them sleep
        // (a pipeline's later stages before the first items reach them),
        // the two awake have a core each. The crowd sees nobody gain by
        // leaving, yet the sleepers will work where they are: the awake
        // are spread as the pin (the first stays on node 1, the second
        // starts on node 0), then the sleepers over the pin's next cores.
        let linux = [Some(3), Some(4), Some(3), Some(4)];
        let share = [Some(1.0), Some(1.0), None, None];
        let started = learner_after_linux_asleep(Moves::Crowd, &linux, &share, None, 10);
        assert_eq!(started[0], vec![3, 0, 4, 1], "{started:?}");
        // A window too short for naps to tell a sleeper (3 periods): the
        // two never ran since they were first seen, which says the same.
        // In that first learner period, the awake thread sent to node 0
        // keeps its memory on node 1; the sleeper sent there has touched
        // nothing yet: its memory is where it starts.
        let (first, policy) = (1..80)
            .map(|periods| learner_after_linux_policy(Moves::Crowd, &linux, &share, None, 3, periods))
            .find(|(learner, _)| !learner.is_empty())
            .expect("a learner period");
        assert_eq!(first[0], vec![3, 0, 4, 1], "{first:?}");
        let homes: Vec<usize> = (1..=4).map(|key| policy.numa_state(key).expect("alive").home).collect();
        assert_eq!(homes, vec![1, 1, 1, 0], "{homes:?}");
        // All four awake, measuring all of their cores (as the spinning
        // test's working threads): the crowd's judgement, by which nobody
        // gains by leaving.
        let awake = learner_after_linux(Moves::Crowd, &linux, &[1.0; 4], None);
        assert!(awake[0].iter().all(|&place| place == 3 || place == 4), "{awake:?}");
    }

    #[test]
    fn where_memory_follows_and_no_other_program_runs_a_node_a_thread_over_the_pin_s_count_hands_it_on() {
        // Node 0 has cores 0 and 1, node 1 core 3 alone; nine threads, the
        // pin's three a core (six on node 0). Linux left five on node 0
        // (three on core 0, two on core 1) and four on core 3: 1.33 times
        // the mean, below the 1.5 that counts beside another program's load.
        let linux = [0, 0, 0, 1, 1, 3, 3, 3, 3].map(Some);
        let share: Vec<Option<f64>> = [1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25]
            .into_iter()
            .map(Some)
            .collect();
        let first_probe = |follows: Option<f64>, others: Option<f64>| {
            let layout = Layout::new(&[vec![1, 1], vec![1]]);
            let policy = LearnPolicy::new(layout, probe_at_once(2), 1).assuming_memory_follows(follows);
            let (learner, _) = run_after_linux(policy, &linux, &share, None, others, 80);
            let first = learner
                .first()
                .cloned()
                .unwrap_or_else(|| panic!("a probe: {learner:?}"));
            first.iter().filter(|&&place| place == 3).count()
        };
        // Alone, memory following: one of core 3's four threads goes to
        // node 0, where the crowd measured a core with two.
        assert_eq!(first_probe(Some(2.0), Some(0.0)), 3, "the pin's count on node 1");
        // Beside another program's load, where memory stays, or where the
        // target cannot tell: Linux's counts.
        assert_eq!(first_probe(Some(2.0), Some(0.3)), 4, "another program's load");
        assert_eq!(first_probe(None, Some(0.0)), 4, "memory stays");
        assert_eq!(first_probe(Some(2.0), None), 4, "others unknown");
    }
}
