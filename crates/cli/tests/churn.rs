//! Thread churn under the learner: a program that starts a thread for every
//! task keeps pinlearn's summary and memory bounded, re-pins only live
//! threads, and leaves nothing behind (the long run: docs/reliability.md).

mod common;

use common::{run_json, stderr};

#[test]
fn a_program_starting_a_thousand_threads_a_second_keeps_the_summary_bounded() {
    let exe = env!("CARGO_BIN_EXE_pinlearn");
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/unguarded-learner.toml");
    let out = run_json(&[
        "run",
        "--config",
        config,
        "--interval",
        "20ms",
        "--",
        exe,
        "work",
        "--threads",
        "2",
        "--quiet",
        "churn",
        "--rate",
        "1000",
        "--work",
        "50us",
        "--linger",
        "20ms",
        "--duration",
        "3s",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("cannot set the affinity"), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON summary");
    let seen = summary["threads_seen"].as_u64().expect("threads_seen");
    let listed = summary["threads"].as_array().expect("threads").len() as u64;
    let not_listed = summary["ended_not_listed"]["threads"].as_u64().unwrap_or(0);
    assert!(seen > 300, "pinlearn saw the short threads: {seen}");
    assert_eq!(listed + not_listed, seen, "{summary}");
    // The workload's main and spawner threads, the tasks alive at the end,
    // and the first 64 that ended; all others are counted together.
    assert!(listed <= 64 + 3 + 60, "{listed} threads listed");
    // The learner re-pinned tasks, not only the two long-lived threads.
    // How many depends on how many tasks live to see their re-pin: 649-1167
    // in runs on this 2-CPU machine, 58 in one fresh-clone CI run that saw
    // 2852 tasks in 151 periods (2026-11-27).
    assert!(summary["repins"].as_u64().unwrap() > 20, "the learner acted: {summary}");
    let rss = summary["manager_max_rss_kib"].as_u64().expect("memory reported");
    assert!(rss > 0 && rss < 64 * 1024, "manager resident memory {rss} KiB");
    let pid = summary["threads"][0]["pid"].as_u64().expect("a pid") as u32;
    assert!(
        !pinlearn_engine::live::journal_path(pid).exists(),
        "the journal is removed"
    );
}
