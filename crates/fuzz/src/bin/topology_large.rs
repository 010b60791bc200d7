//! afl target: see the crate's doc.

fn main() {
    afl::fuzz!(|data: &[u8]| pinlearn_fuzz::check_topology_large(data));
}
