//! Memory binding (paper 002 §5.2): a process's memory follows its threads.
//!
//! ```text
//!   every NUMA period, per process:
//!     share of its threads whose place lies in node n   (threads on the machine-wide place count for none)
//!     max share >= zeta and n != the node its memory was last bound to
//!        └─► Target::bind_memory(process, n)   (LiveProcess: migrate_pages(2) to n)
//! ```
//!
//! The paper binds a thread's new memory once a share zeta of the threads
//! runs on a node (zeta = 1/2 helped, zeta = 0 did not). From outside the
//! process pinlearn cannot change another process's memory policy, so it
//! moves the pages the process already has; new pages then follow Linux's
//! first-touch rule, which places them on the node of the thread that
//! touches them, i.e. the node its threads now run on. The decision here is
//! pure; the syscall lives in `live`.

use std::collections::BTreeMap;

/// Which process's memory to move where: `(pid, node)` pairs.
///
/// `threads`: `(pid, node of the thread's place or None)` for every live
/// thread; `bound`: the node each process's memory was last moved to.
pub fn plan(threads: &[(u32, Option<usize>)], bound: &BTreeMap<u32, usize>, zeta: f64) -> Vec<(u32, usize)> {
    let mut per_process: BTreeMap<u32, (usize, BTreeMap<usize, usize>)> = BTreeMap::new();
    for &(pid, node) in threads {
        let entry = per_process.entry(pid).or_default();
        entry.0 += 1;
        if let Some(node) = node {
            *entry.1.entry(node).or_insert(0) += 1;
        }
    }
    let mut moves = Vec::new();
    for (pid, (total, per_node)) in per_process {
        // The node holding the most threads (the lowest index on a tie).
        let Some((&node, &count)) = per_node.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))) else {
            continue;
        };
        if count as f64 >= zeta * total as f64 && count > 0 && bound.get(&pid) != Some(&node) {
            moves.push((pid, node));
        }
    }
    moves
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_follows_a_majority_share() {
        let threads = [
            (10, Some(1)),
            (10, Some(1)),
            (10, Some(0)),
            (20, Some(0)),
            (20, None),
            (20, None),
        ];
        let none = BTreeMap::new();
        assert_eq!(
            plan(&threads, &none, 0.5),
            vec![(10, 1)],
            "process 20 has only 1/3 on node 0"
        );
        assert_eq!(plan(&threads, &none, 0.3), vec![(10, 1), (20, 0)]);
    }

    #[test]
    fn nothing_moves_twice_to_the_same_node() {
        let threads = [(10, Some(1)), (10, Some(1))];
        let bound = BTreeMap::from([(10, 1)]);
        assert!(plan(&threads, &bound, 0.5).is_empty());
        let moved = BTreeMap::from([(10, 0)]);
        assert_eq!(plan(&threads, &moved, 0.5), vec![(10, 1)]);
    }

    #[test]
    fn zeta_one_needs_every_thread_on_the_node() {
        let split = [(10, Some(0)), (10, Some(1))];
        assert!(plan(&split, &BTreeMap::new(), 1.0).is_empty());
        let together = [(10, Some(1)), (10, Some(1))];
        assert_eq!(plan(&together, &BTreeMap::new(), 1.0), vec![(10, 1)]);
    }

    #[test]
    fn ties_go_to_the_lower_node() {
        let split = [(10, Some(1)), (10, Some(0))];
        assert_eq!(plan(&split, &BTreeMap::new(), 0.5), vec![(10, 0)]);
    }
}
