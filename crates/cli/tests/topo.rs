//! `pinlearn topo`: every level of a topology in the text tree and the JSON
//! report, and the places a policy may use at each level.

mod common;

use common::{run, stderr};

const PACKAGES: &str = "package:2 l3cache:2 core:2 pu:2";

#[test]
fn topo_draws_packages_caches_nodes_cores_and_pus() {
    let out = run(&["topo", "--topology", PACKAGES]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(
        text.contains("2 packages, 4 L3 caches, 1 NUMA node with CPUs, 8 cores, 16 CPUs (0-15)"),
        "{text}"
    );
    for line in [
        "node 0: CPUs 0-15, 8 cores of 2 CPUs",
        "  package 0: CPUs 0-7, 4 cores of 2 CPUs",
        "    L3 1: CPUs 4-7, 2 cores of 2 CPUs",
        "      cores: 4-5 6-7",
        "  package 1: CPUs 8-15, 4 cores of 2 CPUs",
        "    L3 3: CPUs 12-15, 2 cores of 2 CPUs",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
    }
    // 8 cores, the node, 2 packages and 4 L3 caches.
    assert!(text.contains("places a thread may be given (15;"), "{text}");
}

#[test]
fn topo_json_lists_groups_and_their_places() {
    let out = run(&["topo", "--topology", PACKAGES, "--json", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let groups = report["topology"]["groups"].as_array().expect("groups");
    assert_eq!(groups.len(), 6);
    assert_eq!(groups[0]["level"], "package");
    assert_eq!(groups[2]["level"], "l3");
    assert_eq!(groups[5]["cpus"], "12-15");
    let kinds: Vec<&str> = report["places"]
        .as_array()
        .expect("places")
        .iter()
        .map(|p| p["kind"].as_str().expect("kind"))
        .collect();
    assert_eq!(kinds.iter().filter(|k| **k == "core").count(), 8);
    assert_eq!(kinds.iter().filter(|k| **k == "package").count(), 2);
    assert_eq!(kinds.iter().filter(|k| **k == "l3").count(), 4);
}

#[test]
fn topo_lists_the_speed_sources_that_work_here() {
    let out = run(&["topo", "--json", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let probes = &report["probes"];
    // auto takes the first that works: useful, instructions, cpu.
    let expected = if probes["useful"] == true {
        "useful"
    } else if probes["instructions"] == true {
        "instructions"
    } else {
        "cpu"
    };
    assert_eq!(probes["auto"], expected, "{probes}");
    assert_eq!(probes["useful_note"].is_null(), probes["useful"] == true, "{probes}");
    assert_eq!(probes["io"], true, "/proc/self/io is readable: {probes}");
    assert_eq!(probes["proc_stat"], true, "/proc/stat is readable: {probes}");
    // Page faults are a software event: recorded wherever perf_event_open
    // works at all (the CPU-clock samples of `useful` are one too); their
    // pages move only between real memory nodes.
    assert_eq!(probes["page_faults"], probes["useful"], "{probes}");
    assert_eq!(
        probes["page_faults_note"].is_null(),
        probes["page_faults"] == true,
        "{probes}"
    );
    let nodes = report["topology"]["nodes"].as_array().expect("nodes").len();
    assert_eq!(
        report["thread_memory_moves"],
        nodes > 1 && probes["page_faults"] == true,
        "{report}"
    );
    let out = run(&["topo"]);
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(text.contains(&format!("--metric auto takes {expected} here")), "{text}");
}
