//! migrate_pages(2): move every page of a process to one NUMA node.
//!
//! ```text
//!   migrate_process(pid, all memory nodes, to) ─► migrate_pages(pid, maxnode, old = all but `to`, new = {to})
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

/// Moves the pages of process `pid` on any of `nodes` to node `to`.
pub fn migrate_process(pid: u32, nodes: &[u32], to: u32) -> io::Result<()> {
    let highest = nodes.iter().copied().chain([to]).max().unwrap_or(0) as usize;
    let words = highest / WORD_BITS + 1;
    let old = mask(nodes.iter().copied().filter(|&n| n != to), words);
    let new = mask([to].into_iter(), words);
    // The kernel reads maxnode - 1 bits.
    let maxnode = words * WORD_BITS + 1;
    // SAFETY: both masks are valid for `words` u64 words, which covers maxnode - 1 bits.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_migrate_pages,
            pid as libc::pid_t,
            maxnode as libc::c_ulong,
            old.as_ptr(),
            new.as_ptr(),
        )
    };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
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
    fn moving_to_the_only_node_is_accepted_by_the_kernel() {
        // On any machine node 0 exists; moving our own pages there is a no-op.
        migrate_process(std::process::id(), &[0], 0).expect("migrate_pages to node 0");
    }
}
