//! Moving memory to a NUMA node: a whole process or a thread's pages from
//! outside, a thread's stack from inside.
//!
//! ```text
//!   migrate_process(pid, all memory nodes, to) ─► migrate_pages(pid, maxnode, old = all but `to`, new = {to})
//!   move_pages_to(pid, addresses, to)           ─► move_pages(pid, MOVE_CHUNK at a time, {to}, MPOL_MF_MOVE)
//!   nodes_of(pid, addresses)                    ─► move_pages(pid, MOVE_CHUNK at a time, NULL): each page's node
//!   bind_range(stack, to)  (in-process only)    ─► mbind(stack, MPOL_PREFERRED {to}, MPOL_MF_MOVE)
//! ```
//!
//! Pages that cannot move (shared, locked) stay where they are; the kernel
//! reports their number, which is not an error here.

use std::io;

const WORD_BITS: usize = u64::BITS as usize;

fn mask(nodes: impl Iterator<Item = u32>, words: usize) -> Vec<u64> {
    let mut mask = vec![0u64; words];
    for node in nodes {
        mask[node as usize / WORD_BITS] |= 1u64 << (node as usize % WORD_BITS);
    }
    mask
}

/// Mask words needed for nodes up to `highest`, and the matching `maxnode`
/// argument (the kernel reads maxnode - 1 bits).
fn mask_size(highest: u32) -> (usize, libc::c_ulong) {
    let words = highest as usize / WORD_BITS + 1;
    (words, (words * WORD_BITS + 1) as libc::c_ulong)
}

/// A syscall's return value as a result.
fn checked(ret: libc::c_long) -> io::Result<()> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Moves the pages of process `pid` on any of `nodes` to node `to`.
pub fn migrate_process(pid: u32, nodes: &[u32], to: u32) -> io::Result<()> {
    let (words, maxnode) = mask_size(nodes.iter().copied().chain([to]).max().unwrap_or(0));
    let old = mask(nodes.iter().copied().filter(|&n| n != to), words);
    let new = mask([to].into_iter(), words);
    // SAFETY: both masks are valid for `words` u64 words, which covers maxnode - 1 bits.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_migrate_pages,
            pid as libc::pid_t,
            maxnode,
            old.as_ptr(),
            new.as_ptr(),
        )
    };
    checked(ret)
}

/// Pages per move_pages(2) call.
const MOVE_CHUNK: usize = 4096;

/// move_pages(2) on `addresses` of process `pid`, [`MOVE_CHUNK`] at a time:
/// each page to `to`, or, with `None`, nowhere (the kernel only says where
/// each is). Calls `status` with each chunk's per-page answers (a node, or
/// a negative errno for a page not mapped, not present, or not movable).
fn move_pages(pid: u32, addresses: &[u64], to: Option<u32>, mut status: impl FnMut(&[libc::c_int])) -> io::Result<()> {
    let nodes = to.map(|to| vec![to as libc::c_int; MOVE_CHUNK.min(addresses.len())]);
    let mut answers = vec![0 as libc::c_int; MOVE_CHUNK.min(addresses.len())];
    for chunk in addresses.chunks(MOVE_CHUNK) {
        // SAFETY: `chunk`, `answers` and `nodes` (when there is one) each
        // hold at least `chunk.len()` elements; addresses are only read by
        // the kernel, in the other process's address space; a null `nodes`
        // asks for each page's node, moving none.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_move_pages,
                pid as libc::pid_t,
                chunk.len() as libc::c_ulong,
                chunk.as_ptr(),
                nodes.as_ref().map_or(std::ptr::null(), |nodes| nodes.as_ptr()),
                answers.as_mut_ptr(),
                if to.is_some() { MPOL_MF_MOVE as libc::c_int } else { 0 },
            )
        };
        checked(ret)?;
        status(&answers[..chunk.len()]);
    }
    Ok(())
}

/// Moves the pages of process `pid` at `addresses` (page aligned) to node
/// `to`; returns how many are on `to` afterwards. Pages no longer mapped,
/// or shared with other processes, stay (the kernel reports them per page;
/// not an error here).
pub fn move_pages_to(pid: u32, addresses: &[u64], to: u32) -> io::Result<usize> {
    let mut there = 0;
    move_pages(pid, addresses, Some(to), |status| {
        there += status.iter().filter(|&&node| node == to as libc::c_int).count();
    })?;
    Ok(there)
}

/// The node each page at `addresses` (page aligned) of process `pid` is
/// on, `None` for one not mapped or not yet touched.
pub fn nodes_of(pid: u32, addresses: &[u64]) -> io::Result<Vec<Option<u32>>> {
    let mut nodes = Vec::with_capacity(addresses.len());
    move_pages(pid, addresses, None, |status| {
        nodes.extend(status.iter().map(|&node| u32::try_from(node).ok()));
    })?;
    Ok(nodes)
}

const MPOL_PREFERRED: libc::c_ulong = 1;
const MPOL_MF_MOVE: libc::c_ulong = 1 << 1;

/// Binds the pages of `[start, start + len)` in this process to node `to`
/// (preferred, so allocation still succeeds when the node is full) and moves
/// the pages already there.
pub fn bind_range(start: usize, len: usize, to: u32) -> io::Result<()> {
    let (words, maxnode) = mask_size(to);
    let nodes = mask([to].into_iter(), words);
    // SAFETY: mbind only changes the policy of this process's own mapping; the
    // mask is valid for maxnode - 1 bits.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            start as libc::c_ulong,
            len as libc::c_ulong,
            MPOL_PREFERRED,
            nodes.as_ptr(),
            maxnode,
            MPOL_MF_MOVE,
        )
    };
    checked(ret)
}

/// The calling thread's stack as (start, length), page aligned.
pub fn current_thread_stack() -> Option<(usize, usize)> {
    // SAFETY: the attribute object is initialised by pthread_getattr_np and
    // destroyed once; the out-pointers are valid locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        ok.then_some((addr as usize, size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_set_one_bit_per_node() {
        assert_eq!(mask([0, 3].into_iter(), 1), vec![0b1001]);
        assert_eq!(mask([64].into_iter(), 2), vec![0, 1]);
    }

    #[test]
    fn a_thread_stack_can_be_bound_to_node_0() {
        let handle = std::thread::spawn(|| {
            let (start, len) = current_thread_stack().expect("own stack");
            let here = &start as *const usize as usize;
            assert!(here >= start && here < start + len, "a local lies in the stack");
            bind_range(start, len, 0)
        });
        handle.join().unwrap().expect("mbind of the stack to node 0");
    }

    #[test]
    fn pages_of_a_thread_move_to_node_0_and_unmapped_ones_are_skipped() {
        let page = 4096usize;
        let buffer: Vec<u8> = vec![1; 40 * page];
        let first = (buffer.as_ptr() as usize).next_multiple_of(page);
        let mut addresses: Vec<u64> = (0..32).map(|i| (first + i * page) as u64).collect();
        // An address nothing is mapped at (the zero page of the address space).
        addresses.insert(0, 0);
        let there = move_pages_to(std::process::id(), &addresses, 0).expect("move_pages to node 0");
        assert_eq!(
            there, 32,
            "every mapped page is on node 0, the unmapped one is not counted"
        );
        drop(buffer);
    }

    #[test]
    fn the_node_of_each_touched_page_is_read_and_an_unmapped_one_has_none() {
        let page = 4096usize;
        let buffer: Vec<u8> = vec![1; 20 * page];
        let first = (buffer.as_ptr() as usize).next_multiple_of(page);
        let mut addresses: Vec<u64> = (0..16).map(|i| (first + i * page) as u64).collect();
        addresses.push(0);
        let nodes = nodes_of(std::process::id(), &addresses).expect("move_pages query");
        assert_eq!(nodes.len(), 17);
        // Every machine has a node 0; pages of a one-node machine are there.
        let single = std::fs::read_to_string("/sys/devices/system/node/online").map(|s| s.trim() == "0");
        assert!(nodes[..16].iter().all(Option::is_some), "{nodes:?}");
        if single.unwrap_or(false) {
            assert!(nodes[..16].iter().all(|&n| n == Some(0)), "{nodes:?}");
        }
        assert_eq!(nodes[16], None, "nothing is mapped at address 0");
        drop(buffer);
    }

    #[test]
    fn moving_to_the_only_node_is_accepted_by_the_kernel() {
        // On any machine node 0 exists; moving our own pages there is a no-op.
        migrate_process(std::process::id(), &[0], 0).expect("migrate_pages to node 0");
    }
}
