//! Fuzzing the topology crate's parsers with proptest: CPU lists, hwloc
//! synthetic strings and XML files. Whatever the input: no panic, and every
//! rejection is one line that names what was wrong.
//!
//! Cases per property: `PINLEARN_FUZZ_CASES` (default 2000, what CI runs);
//! the documented long run (docs/reliability.md) sets it to 1000000.

use pinlearn_topology::{CpuSet, Topology};
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("PINLEARN_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000)
}

/// Text near the grammar (digits, separators, words) and anything at all.
fn near_cpu_lists() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9,\\- ]{0,24}",
        "[0-9]{0,25}(-[0-9]{0,25})?(,[0-9]{0,6}){0,3}",
        any::<String>(),
    ]
}

fn near_synthetic() -> impl Strategy<Value = String> {
    let level = prop_oneof![
        Just("package"),
        Just("numa"),
        Just("node"),
        Just("l3cache"),
        Just("l2"),
        Just("die"),
        Just("core"),
        Just("pu"),
        Just("group"),
        Just("x"),
    ];
    prop_oneof![
        proptest::collection::vec((level, 0u32..9, "(\\(indexes=[0-9,]{0,8}\\))?"), 0..6).prop_map(|levels| {
            levels
                .into_iter()
                .map(|(name, count, extra)| format!("{name}:{count}{extra}"))
                .collect::<Vec<_>>()
                .join(" ")
        }),
        "[a-z0-9:() =,]{0,40}",
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn cpu_lists_parse_or_say_why(text in near_cpu_lists()) {
        match CpuSet::parse_list(&text) {
            Ok(set) => {
                // What was read prints back to a list that reads the same.
                prop_assert_eq!(CpuSet::parse_list(&set.to_string()).ok(), Some(set));
            }
            Err(error) => {
                let message = error.to_string();
                prop_assert!(!message.is_empty() && !message.contains('\n'), "{:?}", message);
            }
        }
    }

    #[test]
    fn synthetic_strings_build_or_say_why(spec in near_synthetic()) {
        match Topology::from_synthetic(&spec) {
            Ok(topology) => {
                prop_assert!(!topology.nodes().is_empty());
                prop_assert!(topology.cpus().len() as u64 <= pinlearn_topology::MAX_SYNTHETIC_PUS);
                // Drawing it never fails either.
                prop_assert!(topology.describe().lines().count() >= 3);
            }
            Err(error) => {
                let message = error.to_string();
                prop_assert!(message.contains("synthetic") && !message.contains('\n'), "{:?}", message);
            }
        }
    }
}

/// Found by `xml_files_load_or_say_why`: closing tags out of place make
/// hwloc 2.9 crash (SIGSEGV in hwloc_topology_load); it must be an error.
#[test]
fn an_xml_file_that_crashes_hwloc_is_an_error() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("crash.xml");
    std::fs::write(
        &path,
        "<?xml version=\"1\x0b0\"?>\n<topology><object type=\"NUMANode\" os_index=\"5\" cpuset=\"0x7\"/><object type=\"Machine\"/></object></object></object></topology>",
    )
    .expect("write");
    let error = Topology::from_xml(&path).expect_err("not a topology");
    assert!(error.to_string().contains("crash.xml"), "{error}");
}

proptest! {
    // Each case writes a file and runs hwloc's XML parser: fewer cases.
    #![proptest_config(ProptestConfig { cases: cases() / 10 + 1, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn xml_files_load_or_say_why(bytes in prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..400),
        "<\\?xml version=\"1.0\"\\?>\\n<topology( version=\"2.0\")?>(<object type=\"(Machine|Package|Core|PU|NUMANode)\"( os_index=\"[0-9]{1,3}\")?( cpuset=\"0x[0-9a-f]{1,8}\")?/?>){0,6}(</object>){0,3}(</topology>)?"
            .prop_map(String::into_bytes),
    ]) {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("fuzz.xml");
        std::fs::write(&path, &bytes).expect("write");
        if let Err(error) = Topology::from_xml(&path) {
            let message = error.to_string();
            prop_assert!(message.contains("fuzz.xml") && !message.contains('\n'), "{:?}", message);
        }
    }
}
