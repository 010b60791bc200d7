//! Every kind of bad input: one clear line on stderr, exit status 2, and no
//! thread of the target left with a changed affinity.

mod common;

use common::*;

fn assert_rejected(out: &std::process::Output, needle: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "status for {needle:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line expected, got: {err}");
    assert!(
        err.to_lowercase().contains(&needle.to_lowercase()),
        "{needle:?} not in: {err}"
    );
}

#[test]
fn bad_inputs_to_attach_exit_2_and_leave_the_target_untouched() {
    let target = light_target("0", 2);
    let pid = target.0.id().to_string();
    let before = masks(target.0.id());
    let dir = tempfile::tempdir().unwrap();
    let bad_config = dir.path().join("bad.toml");
    std::fs::write(&bad_config, "interval = \"50ms\"\n[learn.pla]\nstep = 7\n").unwrap();
    let bad_config = bad_config.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["attach", "--cpus", "3-1", &pid], "backwards"),
        (vec!["attach", "--cpus", "", &pid], "empty"),
        (vec!["attach", "--cpus", "0,x", &pid], "x"),
        (vec!["attach", "--cpus", "4000-4001", &pid], "outside"),
        (vec!["attach", "--metric", "cycles", &pid], "cycles"),
        (vec!["attach", "--policy", "fastest", &pid], "fastest"),
        (vec!["attach", "--objective", "best", &pid], "best"),
        (vec!["attach", "--interval", "soon", &pid], "soon"),
        (vec!["attach", "--config", bad_config, &pid], "step"),
        (
            vec!["attach", "--config", "/nonexistent/pinlearn.toml", &pid],
            "cannot read config",
        ),
        (vec!["attach", "--trace", "/nonexistent/dir/trace.csv", &pid], "trace"),
        (vec!["attach", "--duration", "1s", "4194304000"], "4194304000"),
        (vec!["attach", "--duration", "1s", "99999999"], "no process"),
        (vec!["attach", "--bogus-flag", &pid], "bogus"),
    ];
    for (args, needle) in cases {
        let out = run(&args);
        assert_rejected(&out, needle);
        assert_eq!(masks(target.0.id()), before, "masks changed by {args:?}");
    }
}

#[test]
fn bad_inputs_to_run_exit_2_without_starting_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started");
    let touch = format!("touch {}", marker.display());
    for (args, needle) in [
        (vec!["run", "--cpus", "1-0", "--", "sh", "-c", &touch], "backwards"),
        (vec!["run", "--cpus", "4000", "--", "sh", "-c", &touch], "outside"),
        (
            vec!["run", "--objective", "balanced:x", "--", "sh", "-c", &touch],
            "balanced:x",
        ),
        (
            vec!["run", "--trace", "/nonexistent/dir/t.csv", "--", "sh", "-c", &touch],
            "trace",
        ),
    ] {
        let out = run(&args);
        assert_rejected(&out, needle);
        assert!(!marker.exists(), "{args:?} started the program");
    }
}

#[test]
fn bad_inputs_to_bench_sim_and_demo_exit_2_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let bad_config = dir.path().join("bad.toml");
    std::fs::write(&bad_config, "[learn]\nobjective = \"fastest\"\n").unwrap();
    let bad_config = bad_config.to_str().unwrap();
    let not_a_bench = dir.path().join("not-a-bench.json");
    std::fs::write(&not_a_bench, "{\"runs\": []}").unwrap();
    let not_a_bench = not_a_bench.to_str().unwrap();
    for (args, needle) in [
        (
            vec!["sim", "--calibrate", "/nonexistent/bench.json"],
            "cannot read the bench file",
        ),
        (vec!["sim", "--calibrate", not_a_bench], "no \"setup\""),
        (vec!["bench", "--config", bad_config, "--workload", "aco"], "fastest"),
        (
            vec!["bench", "--config", "/nonexistent/pinlearn.toml"],
            "cannot read config",
        ),
        (vec!["bench", "--workload", "quake"], "quake"),
        (vec!["demo", "--config", bad_config], "fastest"),
        (
            vec!["demo", "--config", "/nonexistent/pinlearn.toml"],
            "cannot read config",
        ),
        (vec!["bench", "--scenarios", "Z.9"], "Z.9"),
        (vec!["sim", "--scenarios", "Z.9"], "Z.9"),
        (vec!["sim", "--topology", "node:x"], "node:x"),
        (
            vec!["bench", "--workload", "fib", "--topology", "node:2 core:1 pu:1"],
            "add --topology-map",
        ),
        (
            vec![
                "bench",
                "--workload",
                "fib",
                "--topology",
                "node:2 core:1 pu:1",
                "--topology-map",
                "0-2",
            ],
            "same number",
        ),
        (
            vec![
                "bench",
                "--workload",
                "fib",
                "--topology",
                "node:2 core:1 pu:1",
                "--topology-map",
                "4000-4001",
            ],
            "not among the bench's own",
        ),
        // clap's missing argument, named in the one line.
        (vec!["bench", "--topology-map", "0-1"], "--topology <SPEC>"),
        (
            vec!["bench", "--cpus", "0", "--topology", "node:1 core:1 pu:1"],
            "cannot be used",
        ),
        (
            vec![
                "bench",
                "--workload",
                "fib",
                "--schedulers",
                "os,learn",
                "--preload",
                "threads",
            ],
            "add one of them",
        ),
        (
            vec![
                "bench",
                "--workload",
                "fib",
                "--schedulers",
                "bubbles",
                "--bubbles",
                "/nonexistent/rules.toml",
            ],
            "cannot read bubbles file",
        ),
        (
            vec![
                "bench",
                "--workload",
                "fib",
                "--schedulers",
                "os",
                "--bubbles",
                "/nonexistent/rules.toml",
            ],
            "--bubbles is read by",
        ),
        (vec!["bench", "--preload", "everything"], "everything"),
    ] {
        let out = run(&args);
        assert_rejected(&out, needle);
    }
}

#[test]
fn attaching_to_a_process_of_another_user_is_refused_with_eperm() {
    use std::os::unix::process::CommandExt;
    if !nix::unistd::Uid::effective().is_root() {
        skip("needs root to run pinlearn as another user");
        return;
    }
    let target = light_target("0", 2);
    let before = masks(target.0.id());
    // The binary must be reachable by `nobody`; the test target dir is
    // usually world-readable. If not, say so instead of passing silently.
    let out = pinlearn()
        .args(["attach", "--duration", "1s", &target.0.id().to_string()])
        .uid(65534)
        .gid(65534)
        .output()
        .expect("run as nobody");
    let err = stderr(&out);
    assert!(
        !err.contains("Permission denied (os error 13)") || out.status.code() == Some(2),
        "{err}"
    );
    assert_rejected(&out, "not permitted");
    assert_eq!(masks(target.0.id()), before);
}

#[test]
fn bench_and_sim_accept_and_refuse_the_same_scenario_and_scheduler_names() {
    let dry = |command: &str, option: &str, value: &str| {
        let mut args = vec![command, "--dry-run", option, value];
        if command == "bench" {
            args.extend(["--workload", "aco"]);
        } else {
            args.extend(["--topology", "node:2 core:2 pu:1", "--threads", "4"]);
        }
        run(&args)
    };
    for (option, value) in [
        ("--scenarios", "A.1"),
        ("--scenarios", "C.3,D"),
        ("--scenarios", "A.D"),
        ("--scenarios", "b.2, c.d"),
        ("--scenarios", "E.1"),
        ("--scenarios", "A.4"),
        ("--scenarios", "C.1,C.1"),
        ("--scenarios", ","),
        ("--schedulers", "os,learn:balanced:0.04@cpu"),
        ("--schedulers", "learn@heartbeat"),
        ("--schedulers", "linux"),
        ("--schedulers", "best-static@cpu"),
        ("--schedulers", "static:mean"),
    ] {
        let bench = dry("bench", option, value);
        let sim = dry("sim", option, value);
        assert_eq!(
            bench.status.code(),
            sim.status.code(),
            "{option} {value}: bench {} / sim {}",
            stderr(&bench),
            stderr(&sim)
        );
        assert!(
            matches!(bench.status.code(), Some(0 | 2)),
            "{option} {value}: {}",
            stderr(&bench)
        );
        if bench.status.code() == Some(2) {
            assert_eq!(stderr(&bench), stderr(&sim), "{option} {value}: the same words");
        }
    }
}
