//! The spread placement of bubble scheduling (paper 001, §4): nested
//! bubbles of threads distributed over the place tree from the machine
//! down, each thread ending on one place (its mask).
//!
//! ```text
//!   spread(place, entities)          entities: threads and bubbles, each with a
//!     │                              load (a bubble: the sum of its contents,
//!     │                              or its hint) and a priority
//!     ├─ open the bubbles whose burst level is this place's level (or that
//!     │    would never meet their level further down this branch)
//!     ├─ a core (or a place with no children): every thread of the
//!     │    entities gets this place
//!     ├─ one child: go into it
//!     ├─ open the bubbles too heavy for any child (no burst level set) and
//!     │    heavier than their share (total load / children; any, where
//!     │    remote_cost is 1), and on a respread those whose threads are
//!     │    under several children now
//!     ├─ per = total load / children; entities lighter than per/30 stay
//!     │    here (their threads get this place)
//!     ├─ greedy: by priority, then load, heaviest first, each entity to the
//!     │    least loaded child (ties: the child whose entities have the
//!     │    lowest priority, then the fewest entities, then the first); on a
//!     │    respread an entity stays under the child all its threads are on, then
//!     │    the smallest entities move from the most loaded child to the
//!     │    least while that lowers the worst load (between nodes: only
//!     │    from a child with at least remote_cost load per CPU, onto
//!     │    CPUs free for them)
//!     ├─ while some child is over its CPUs (load / CPUs > 1), try opening
//!     │    a bubble of the most loaded child (smallest first) and redo the
//!     │    greedy; keep the first that lowers the worst child's load
//!     └─ recurse into every child with what it received
//! ```
//!
//! How this differs from the paper's spread, on purpose: the paper opens a
//! bubble whenever it is heavier than `per` or there are fewer entities than
//! children, which splits a group of threads over NUMA nodes even when it
//! fits in one and the nodes are not full. Here a bubble that fits in a
//! child stays whole as long as no child is over its CPUs: the affinity it
//! declares is kept whenever it costs no CPU time. A bubble with a burst
//! level opens at that level and never earlier or later. And a respread
//! (the paper's regeneration) keeps threads where they are: a bubble whose
//! threads are under several children opens rather than pull them
//! together, and a thread changes node only when its node is short of CPUs
//! and another has one free for it (its memory stays behind; in the
//! simulator, fib on four nodes lost 2-3x to the modelled Linux while
//! respreads moved threads between nodes to even loads out). Short of CPUs
//! means at least `remote_cost` threads per CPU on its node: a thread that
//! gets a third of a CPU at home runs no faster on a CPU of its own 3x
//! farther from its memory (fib with 32 leaves, four per core, lost 42% to
//! the modelled Linux when any node over its CPUs gave leaves away).
//!
//! Everything is deterministic: the same inputs give the same placement.

use super::BubbleSet;
use crate::layout::PlaceKind;
use crate::tree::PlaceTree;
use std::cmp::Ordering;

/// Loads closer than this are equal.
const EPS: f64 = 1e-9;

/// Entities lighter than `per / LIGHT_DIVISOR` stay at the parent place
/// (the paper's rule).
const LIGHT_DIVISOR: f64 = 30.0;

/// One live thread as the spread sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Member {
    /// Index of its bubble in the [`BubbleSet`]; `None`: the root bubble.
    pub bubble: Option<usize>,
    /// Its load: 1 for a thread that runs all the time, about 0 for one
    /// that is blocked.
    pub load: f64,
    /// Higher goes first.
    pub priority: i32,
    /// The place it has now, if an earlier spread gave it one: a later
    /// spread keeps it under the same places where that costs nothing.
    pub previous: Option<usize>,
}

/// A thread or a bubble during the spread.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Entity {
    Thread(usize),
    Bubble(usize),
}

#[derive(Clone, Copy, Debug)]
struct Item {
    entity: Entity,
    load: f64,
    priority: i32,
}

/// The place of every member, aligned with `members`.
///
/// # Panics
/// If a member's bubble is not in `bubbles` (a caller bug).
/// `remote_cost`: how many times slower a thread runs away from its
/// memory, as assumed (see [`DEFAULT_REMOTE_COST`]): a respread moves a
/// thread to another node only from a node with at least that many
/// threads per CPU (its share of a CPU at home is then no better than a
/// whole CPU away from its memory), and onto CPUs free for it.
pub fn spread(tree: &PlaceTree, bubbles: &BubbleSet, members: &[Member], remote_cost: f64) -> Vec<usize> {
    let mut spreader = Spreader::new(tree, bubbles, members, remote_cost);
    let roots = spreader.roots();
    spreader.place_items(tree.root(), roots);
    spreader.out
}

struct Spreader<'a> {
    tree: &'a PlaceTree,
    bubbles: &'a BubbleSet,
    members: &'a [Member],
    remote_cost: f64,
    /// Per bubble: the non-empty bubbles nested right in it, then its threads.
    contents: Vec<Vec<Entity>>,
    /// Per bubble: its load (hint, or the sum of its contents).
    load: Vec<f64>,
    out: Vec<usize>,
}

impl<'a> Spreader<'a> {
    fn new(tree: &'a PlaceTree, bubbles: &'a BubbleSet, members: &'a [Member], remote_cost: f64) -> Self {
        let count = bubbles.len();
        let mut threads_in: Vec<Vec<Entity>> = vec![Vec::new(); count];
        let mut threads_below = vec![0usize; count];
        for (index, member) in members.iter().enumerate() {
            if let Some(bubble) = member.bubble {
                assert!(bubble < count, "thread {index} is in bubble {bubble}, not in the set");
                threads_in[bubble].push(Entity::Thread(index));
                let mut at = Some(bubble);
                while let Some(b) = at {
                    threads_below[b] += 1;
                    at = bubbles.get(b).parent;
                }
            }
        }
        // A bubble holds the bubbles nested in it that have a thread
        // somewhere below (in set order), then its own threads.
        let mut contents: Vec<Vec<Entity>> = vec![Vec::new(); count];
        for (bubble, &below) in threads_below.iter().enumerate() {
            if below > 0
                && let Some(parent) = bubbles.get(bubble).parent
            {
                contents[parent].push(Entity::Bubble(bubble));
            }
        }
        for (list, threads) in contents.iter_mut().zip(threads_in) {
            list.extend(threads);
        }
        let mut load = vec![0.0; count];
        // Children come after their parents in a BubbleSet, so sum backwards.
        for bubble in (0..count).rev() {
            let own: f64 = contents[bubble]
                .iter()
                .map(|e| match *e {
                    Entity::Thread(t) => members[t].load.max(0.0),
                    Entity::Bubble(b) => load[b],
                })
                .sum();
            load[bubble] = bubbles.get(bubble).load.unwrap_or(own);
        }
        Spreader {
            tree,
            bubbles,
            members,
            remote_cost,
            contents,
            load,
            out: vec![tree.root(); members.len()],
        }
    }

    fn item(&self, entity: Entity) -> Item {
        match entity {
            Entity::Thread(t) => Item {
                entity,
                load: self.members[t].load.max(0.0),
                priority: self.members[t].priority,
            },
            Entity::Bubble(b) => Item {
                entity,
                load: self.load[b],
                priority: self.bubbles.get(b).priority,
            },
        }
    }

    /// The root bubble's contents: top-level bubbles with threads, then the
    /// threads in no bubble.
    fn roots(&self) -> Vec<Item> {
        let mut items: Vec<Item> = (0..self.bubbles.len())
            .filter(|&b| self.bubbles.get(b).parent.is_none() && !self.is_empty(b))
            .map(|b| self.item(Entity::Bubble(b)))
            .collect();
        items.extend(
            self.members
                .iter()
                .enumerate()
                .filter(|(_, m)| m.bubble.is_none())
                .map(|(t, _)| self.item(Entity::Thread(t))),
        );
        items
    }

    /// The child of the place being spread that holds the entity's threads
    /// now, if they have places and all of them are under that child (an
    /// entity split over children must move some of them anyway: it is
    /// placed like a new one).
    fn preferred_child(&self, entity: Entity, children: &[usize]) -> Option<usize> {
        let votes = self.votes(entity, children);
        let mut under = votes.iter().enumerate().filter(|&(_, &v)| v > 0).map(|(c, _)| c);
        match (under.next(), under.next()) {
            (Some(child), None) => Some(child),
            _ => None,
        }
    }

    /// How many of the entity's threads are now under each of `children`.
    fn votes(&self, entity: Entity, children: &[usize]) -> Vec<usize> {
        let mut votes = vec![0usize; children.len()];
        let mut stack = vec![entity];
        while let Some(entity) = stack.pop() {
            match entity {
                Entity::Thread(t) => {
                    if let Some(previous) = self.members[t].previous
                        && let Some(c) = children.iter().position(|&child| self.tree.is_within(previous, child))
                    {
                        votes[c] += 1;
                    }
                }
                Entity::Bubble(b) => stack.extend(self.contents[b].iter().copied()),
            }
        }
        votes
    }

    fn is_empty(&self, bubble: usize) -> bool {
        self.contents[bubble].is_empty()
    }

    /// Replaces bubble item `index` of `items` by its contents.
    fn open(&self, items: &mut Vec<Item>, index: usize) {
        let Entity::Bubble(bubble) = items[index].entity else {
            unreachable!("only bubbles open")
        };
        items.swap_remove(index);
        items.extend(self.contents[bubble].iter().map(|&e| self.item(e)));
    }

    /// Opens every bubble (also those revealed by opening) for which `want` says so.
    fn open_while(&self, items: &mut Vec<Item>, want: impl Fn(usize, &Item) -> bool) {
        while let Some(index) = items
            .iter()
            .position(|item| matches!(item.entity, Entity::Bubble(b) if want(b, item)))
        {
            self.open(items, index);
        }
    }

    fn assign_all(&mut self, place: usize, items: &[Item]) {
        let mut stack: Vec<Entity> = items.iter().map(|i| i.entity).collect();
        while let Some(entity) = stack.pop() {
            match entity {
                Entity::Thread(t) => self.out[t] = place,
                Entity::Bubble(b) => stack.extend(self.contents[b].iter().copied()),
            }
        }
    }

    fn place_items(&mut self, place: usize, mut items: Vec<Item>) {
        if items.is_empty() {
            return;
        }
        let kind = self.tree.kind(place);
        let (bubbles, tree) = (self.bubbles, self.tree);
        self.open_while(&mut items, |b, _| {
            bubbles
                .get(b)
                .burst
                .is_some_and(|level| level == kind || !tree.has_below(place, level))
        });
        let children = self.tree.children(place);
        if children.is_empty() {
            self.assign_all(place, &items);
            return;
        }
        if let [only] = children {
            self.place_items(*only, items);
            return;
        }
        let capacity: Vec<f64> = children.iter().map(|&c| self.tree.cpus(c) as f64).collect();
        let widest = capacity.iter().copied().fold(0.0, f64::max);
        // Opening a bubble that no child can hold helps only when it is
        // also more than its share: when every child is over its CPUs
        // anyway, the bubble stays whole with its memory (the paper's `per`
        // rule), where remote memory costs more than local.
        let share = items.iter().map(|i| i.load).sum::<f64>() / children.len() as f64;
        let whole_pays = self.remote_cost > 1.0 + EPS;
        self.open_while(&mut items, |b, item| {
            bubbles.get(b).burst.is_none() && item.load > widest + EPS && (!whole_pays || item.load > share + EPS)
        });

        // A respread keeps threads where they are: a bubble whose threads
        // are under several children now opens, so none of them moves.
        self.open_while(&mut items, |b, item| {
            self.votes(item.entity, children).iter().filter(|&&v| v > 0).count() > 1 && bubbles.get(b).burst.is_none()
        });

        let total: f64 = items.iter().map(|i| i.load).sum();
        let per = total / children.len() as f64;
        let (light, mut heavy): (Vec<Item>, Vec<Item>) = items.into_iter().partition(|i| i.load < per / LIGHT_DIVISOR);
        self.assign_all(place, &light);

        let prefer = |items: &[Item]| -> Vec<Option<usize>> {
            items
                .iter()
                .map(|item| self.preferred_child(item.entity, children))
                .collect()
        };
        // Moves between nodes leave memory behind: a respread makes one
        // only for an entity that far short of CPUs, onto CPUs free for it.
        let remote = children
            .iter()
            .any(|&child| self.tree.has_below(child, PlaceKind::Node))
            .then_some(self.remote_cost);
        let mut assignment = greedy(&mut heavy, &capacity, &prefer, remote);
        loop {
            let worst = worst_load(&assignment, &heavy, &capacity);
            if worst <= 1.0 + EPS {
                break;
            }
            // The most loaded child, and its bubbles that may open, smallest first.
            let loads = child_loads(&assignment, &heavy, children.len());
            let most = (0..children.len())
                .max_by(|&a, &b| {
                    (loads[a] / capacity[a])
                        .total_cmp(&(loads[b] / capacity[b]))
                        .then(b.cmp(&a))
                })
                .expect("two children or more");
            let mut candidates: Vec<usize> = (0..heavy.len())
                .filter(|&i| {
                    assignment[i] == most
                        && matches!(heavy[i].entity, Entity::Bubble(b) if bubbles.get(b).burst.is_none())
                })
                .collect();
            candidates.sort_by(|&a, &b| heavy[a].load.total_cmp(&heavy[b].load).then(a.cmp(&b)));
            let better = candidates.into_iter().find_map(|index| {
                let mut trial = heavy.clone();
                self.open(&mut trial, index);
                let trial_assignment = greedy(&mut trial, &capacity, &prefer, remote);
                (worst_load(&trial_assignment, &trial, &capacity) < worst - EPS).then_some((trial, trial_assignment))
            });
            match better {
                Some((items, items_assignment)) => {
                    heavy = items;
                    assignment = items_assignment;
                }
                None => break,
            }
        }

        let mut per_child: Vec<Vec<Item>> = vec![Vec::new(); children.len()];
        for (item, child) in heavy.into_iter().zip(assignment) {
            per_child[child].push(item);
        }
        let children = children.to_vec();
        for (child, items) in children.into_iter().zip(per_child) {
            self.place_items(child, items);
        }
    }
}

/// Sorts `items` (priority, then load, heaviest first, then those with a
/// `prefer`red child) and gives each a child; returns the child of every
/// item.
///
/// A first spread (no item has a preferred child) gives each to the least
/// loaded child by load per CPU; ties go to the child whose highest
/// priority is lowest (so high-priority entities keep a place to
/// themselves), then to the one holding fewest entities (so entities of no
/// load, such as blocked threads, are spread too), then to the first.
///
/// A respread keeps every entity under the child its threads are on (a
/// move leaves memory behind), places the others as above, then moves an
/// entity only where that lowers the load per CPU of a child over its
/// CPUs: the smallest one that fits, from the most loaded child to the
/// least loaded, until no move helps; between nodes (`remote`: the remote
/// cost) only from a child with that many items per CPU, onto CPUs free
/// for it.
fn greedy(
    items: &mut [Item],
    capacity: &[f64],
    prefer: &dyn Fn(&[Item]) -> Vec<Option<usize>>,
    remote: Option<f64>,
) -> Vec<usize> {
    // Among equals, entities that have a place go first, so one without
    // does not take it from them.
    let mut ranked: Vec<(Item, Option<usize>)> = items.iter().copied().zip(prefer(items)).collect();
    ranked.sort_by(|(a, pa), (b, pb)| {
        b.priority
            .cmp(&a.priority)
            .then(b.load.total_cmp(&a.load))
            .then(pb.is_some().cmp(&pa.is_some()))
            .then_with(|| entity_order(a.entity, b.entity))
    });
    for (slot, (item, _)) in items.iter_mut().zip(&ranked) {
        *slot = *item;
    }
    let preferred: Vec<Option<usize>> = ranked.into_iter().map(|(_, p)| p).collect();
    let mut loads = vec![0.0; capacity.len()];
    let mut priorities = vec![i32::MIN; capacity.len()];
    let mut counts = vec![0usize; capacity.len()];
    let mut assignment: Vec<Option<usize>> = preferred.clone();
    for (item, child) in items.iter().zip(&assignment) {
        if let Some(child) = *child {
            loads[child] += item.load;
            priorities[child] = priorities[child].max(item.priority);
            counts[child] += 1;
        }
    }
    let mut heap: std::collections::BinaryHeap<Slot> = (0..capacity.len())
        .map(|child| Slot {
            share: loads[child] / capacity[child],
            priority: priorities[child],
            count: counts[child],
            child,
        })
        .collect();
    for (item, slot) in items.iter().zip(assignment.iter_mut()) {
        if slot.is_some() {
            continue;
        }
        // Entries of a child changed since they were pushed are stale.
        let best = loop {
            let entry = heap.pop().expect("a child");
            if entry.count == counts[entry.child] {
                break entry;
            }
        };
        let child = best.child;
        loads[child] += item.load;
        priorities[child] = priorities[child].max(item.priority);
        counts[child] += 1;
        heap.push(Slot {
            share: loads[child] / capacity[child],
            priority: priorities[child],
            count: counts[child],
            child,
        });
        *slot = Some(child);
    }
    let mut assignment: Vec<usize> = assignment.into_iter().map(|c| c.expect("every item placed")).collect();
    if preferred.iter().any(Option::is_some) {
        even_out(items, capacity, &mut loads, &mut assignment, remote);
    }
    assignment
}

/// Moves items out of the most loaded child while it is over its CPUs and
/// a move lowers its load per CPU without raising the target's above it:
/// each time the smallest item that does so, to the least loaded child.
/// Between nodes (`remote`: the remote cost), only out of a child with at
/// least that much load per CPU and onto CPUs that stay within their
/// number: an entity leaves its memory only for CPUs of its own, and only
/// where its share of a CPU at home is no better than remote speed.
fn even_out(items: &[Item], capacity: &[f64], loads: &mut [f64], assignment: &mut [usize], remote: Option<f64>) {
    let share = |loads: &[f64], child: usize| loads[child] / capacity[child];
    for _ in 0..items.len() {
        let most = (0..capacity.len())
            .max_by(|&a, &b| share(loads, a).total_cmp(&share(loads, b)).then(b.cmp(&a)))
            .expect("a child");
        let worst = share(loads, most);
        if worst <= 1.0 + EPS || remote.is_some_and(|cost| worst < cost - EPS) {
            return;
        }
        let least = (0..capacity.len())
            .min_by(|&a, &b| share(loads, a).total_cmp(&share(loads, b)).then(a.cmp(&b)))
            .expect("a child");
        let movable = (0..items.len())
            .filter(|&i| assignment[i] == most && items[i].load > EPS)
            .filter(|&i| {
                let after = (loads[least] + items[i].load) / capacity[least];
                after < worst - EPS && (remote.is_none() || after <= 1.0 + EPS)
            })
            .min_by(|&a, &b| items[a].load.total_cmp(&items[b].load).then(a.cmp(&b)));
        let Some(index) = movable else {
            return;
        };
        loads[most] -= items[index].load;
        loads[least] += items[index].load;
        assignment[index] = least;
    }
}

fn entity_order(a: Entity, b: Entity) -> Ordering {
    let key = |e: Entity| match e {
        Entity::Bubble(b) => (0, b),
        Entity::Thread(t) => (1, t),
    };
    key(a).cmp(&key(b))
}

/// A child in the greedy's heap: the smallest share, then the lowest
/// priority, then the fewest entities, then the first child comes out first.
#[derive(Clone, Copy, Debug)]
struct Slot {
    share: f64,
    priority: i32,
    count: usize,
    child: usize,
}

impl Ord for Slot {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap pops the greatest: reverse every key.
        other
            .share
            .total_cmp(&self.share)
            .then(other.priority.cmp(&self.priority))
            .then(other.count.cmp(&self.count))
            .then(other.child.cmp(&self.child))
    }
}

impl PartialOrd for Slot {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Slot {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Slot {}

fn child_loads(assignment: &[usize], items: &[Item], children: usize) -> Vec<f64> {
    let mut loads = vec![0.0; children];
    for (item, &child) in items.iter().zip(assignment) {
        loads[child] += item.load;
    }
    loads
}

/// The load per CPU of the most loaded child, at least 1 (a child within
/// its CPUs is as good as an emptier one).
fn worst_load(assignment: &[usize], items: &[Item], capacity: &[f64]) -> f64 {
    child_loads(assignment, items, capacity.len())
        .iter()
        .zip(capacity)
        .map(|(load, cap)| load / cap)
        .fold(1.0, f64::max)
}
