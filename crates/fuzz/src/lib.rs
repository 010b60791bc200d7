//! Coverage-guided fuzzing (afl) of every parser of input that a user or a
//! supervised program controls. Each check takes raw bytes, feeds them to
//! one parser and asserts what must hold whatever the input: no panic (afl
//! counts a panic as a crash), a rejection is one line, and what is accepted
//! reads back the same once printed.
//!
//! ```text
//!   afl-fuzz ─► bytes ─► src/bin/TARGET.rs ─► check_TARGET(bytes) ─► the parser
//!   seeds/TARGET/* start each target; scripts/fuzz TARGET SECONDS runs one
//! ```
//!
//! The same checks run over the seeds in `cargo test` (tests at the end), so
//! a check that cannot be built or that rejects its own seeds fails in CI.

use pinlearn_engine::bubbles::BubbleRules;
use pinlearn_engine::{Settings, ThreadInfo, format_duration, parse_duration};
use pinlearn_heartbeat::{HeartbeatReader, channel_path_in};
use pinlearn_topology::{CpuSet, MAX_SYNTHETIC_PUS, Topology, synthetic_pus_at_most};

/// A rejection must be one line.
fn one_line(message: &str) {
    assert!(!message.is_empty() && !message.contains('\n'), "{message:?}");
}

/// CPU lists (`--cpus`, `--topology-map`, cpuset files).
pub fn check_cpu_list(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match CpuSet::parse_list(&text) {
        Ok(set) => assert_eq!(CpuSet::parse_list(&set.to_string()).ok(), Some(set)),
        Err(error) => one_line(&error.to_string()),
    }
}

/// Durations (every `DUR` flag and configuration value).
pub fn check_duration(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match parse_duration(&text) {
        Ok(duration) => {
            let again = parse_duration(&format_duration(duration)).expect("printed durations parse");
            assert!(again.abs_diff(duration) <= std::time::Duration::from_nanos(1));
        }
        Err(error) => one_line(&error.to_string()),
    }
}

/// Configuration files (`--config`).
pub fn check_config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match Settings::from_toml_str(&text) {
        Ok(settings) => {
            let again = Settings::from_toml_str(&settings.to_toml()).expect("printed settings parse");
            assert_eq!(again.to_toml(), settings.to_toml());
        }
        Err(error) => one_line(&error.to_string()),
    }
}

/// Topologies (`--topology`) up to [`BUILT_PUS`]: the first byte chooses a
/// synthetic string (even) or an XML file (odd) made of the rest. A
/// synthetic string whose size bound is over [`BUILT_PUS`] is built only if
/// pinlearn would refuse it before hwloc sees it (over
/// [`MAX_SYNTHETIC_PUS`]); those in between are left to
/// [`check_topology_large`]. hwloc takes up to seconds on a large machine,
/// so without this limit afl's corpus drifts towards them and its rate
/// falls from hundreds of inputs per second to a few.
pub fn check_topology(data: &[u8]) {
    check_topology_up_to(data, BUILT_PUS);
}

/// [`check_topology`] over every size pinlearn accepts (up to
/// [`MAX_SYNTHETIC_PUS`] PUs).
pub fn check_topology_large(data: &[u8]) {
    check_topology_up_to(data, MAX_SYNTHETIC_PUS);
}

/// The largest synthetic description [`check_topology`] builds, in PUs.
pub const BUILT_PUS: u64 = 1024;

fn check_topology_up_to(data: &[u8], built_pus: u64) {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let result = if choice % 2 == 0 {
        let spec = String::from_utf8_lossy(rest);
        let bound = synthetic_pus_at_most(spec.trim());
        if bound > built_pus && bound <= MAX_SYNTHETIC_PUS {
            return;
        }
        Topology::from_synthetic(&spec)
    } else {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("fuzz.xml");
        std::fs::write(&path, rest).expect("write");
        Topology::from_xml(&path)
    };
    match result {
        Ok(topology) => assert!(topology.describe().lines().count() >= 3),
        Err(error) => one_line(&error.to_string()),
    }
}

/// Heartbeat channel files (written by the supervised program).
pub fn check_channel(data: &[u8]) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let pid = std::process::id();
    std::fs::write(channel_path_in(dir.path(), pid), data).expect("write");
    match HeartbeatReader::open_in(dir.path(), pid) {
        Ok(Some(mut reader)) => {
            let mut out = Vec::new();
            match reader.read_into(&mut out) {
                Ok(()) => assert!(out.len() <= reader.slot_count() as usize),
                Err(error) => one_line(&error.to_string()),
            }
        }
        Ok(None) => {}
        Err(error) => one_line(&error.to_string()),
    }
}

/// Bubble rules files (`--bubbles`): what is accepted classifies threads
/// (names made of the input's lines) into bubbles of the set.
pub fn check_bubbles(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match BubbleRules::parse(&text, "fuzz.toml") {
        Ok(mut rules) => {
            assert!(!rules.set().is_empty());
            for (tid, name) in text.lines().take(16).enumerate() {
                let who = ThreadInfo {
                    pid: tid as u32,
                    tid: tid as u32,
                    name: name.chars().take(15).collect(),
                    ppid: tid.saturating_sub(1) as u32,
                };
                if let Some(bubble) = rules.classify(&who) {
                    assert!(bubble < rules.set().len());
                }
            }
            for note in rules.take_notes() {
                one_line(&note);
            }
        }
        Err(error) => one_line(&error.to_string()),
    }
}

/// One check: raw bytes in, a panic if something that must hold does not.
pub type Check = fn(&[u8]);

/// The checks by target name (the binaries and scripts/fuzz use these names).
pub const TARGETS: [(&str, Check); 7] = [
    ("cpu_list", check_cpu_list),
    ("duration", check_duration),
    ("config", check_config),
    ("topology", check_topology),
    ("topology_large", check_topology_large),
    ("channel", check_channel),
    ("bubbles", check_bubbles),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn every_target_passes_its_seeds() {
        for (name, check) in TARGETS {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds").join(name);
            let seeds: Vec<_> = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .flatten()
                .collect();
            assert!(!seeds.is_empty(), "{name} has seeds");
            for seed in seeds {
                check(&std::fs::read(seed.path()).expect("seed"));
            }
        }
    }
}
