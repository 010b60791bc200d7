//! A tiny matrix end to end through the real `pinlearn` binary: the JSON
//! schema, the interleaving, and the statistics against values computed here
//! from the runs in that same JSON.
//!
//! The binary is the one cargo built for this package's tests.

use serde_json::Value;
use std::path::PathBuf;

fn pinlearn_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_pinlearn"))
}

/// Runs `pinlearn bench ARGS` and returns its stdout; panics unless it succeeds.
fn bench(args: &[&str]) -> String {
    let output = std::process::Command::new(pinlearn_binary())
        .arg("bench")
        .args(args)
        .output()
        .expect("pinlearn starts");
    assert!(
        output.status.success(),
        "pinlearn bench {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8 output")
}

/// The JSON document the bench wrote to `path`.
fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("json written")).expect("valid JSON")
}

fn number(v: &Value, key: &str) -> f64 {
    v.get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{key} is not a string in {v}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn tiny_matrix_json_schema_interleaving_and_statistics() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json_path = dir.path().join("bench.json");
    let md_path = dir.path().join("bench.md");
    bench(&[
        "--workload",
        "aco",
        "--workload-args",
        "--iterations 4000 --ants 8",
        "--scenarios",
        "C.1,C.2",
        "--schedulers",
        "os,static",
        "--repeat",
        "2",
        "--json",
        json_path.to_str().expect("utf-8 path"),
        "--markdown",
        md_path.to_str().expect("utf-8 path"),
        "--quiet",
    ]);

    let doc = read_json(&json_path);
    let runs = doc["runs"].as_array().expect("runs is a list");
    let summary = doc["summary"].as_array().expect("summary is a list");
    assert_eq!(runs.len(), 2 * 2 * 2, "2 scenarios x 2 schedulers x 2 repeats");
    assert_eq!(summary.len(), 2 * 2);
    assert_eq!(doc["calibration"].as_array().map(Vec::len), Some(1), "one level: C");

    for r in runs {
        assert_eq!(text(r, "workload"), "aco");
        assert!(["C.1", "C.2"].contains(&text(r, "scenario")));
        assert!(["os", "static"].contains(&text(r, "scheduler")));
        assert!(r["repeat"].as_u64().is_some_and(|k| k < 2));
        assert!(number(r, "completion_s") > 0.0);
        // Runs last several 50 ms periods, so the manager measured speeds.
        assert!(number(r, "mean_speed") > 0.0, "managed runs measure speed: {r}");
        assert!(number(r, "manager_cpu_s") >= 0.0);
        assert!(number(r, "workload_cpu_s") > 0.0, "{r}");
        assert!(r["threads"].as_u64().is_some_and(|t| t >= 1));
    }

    // Interleaved: repeat 0 runs os then static, repeat 1 static then os.
    for scenario in ["C.1", "C.2"] {
        let order: Vec<(&str, u64)> = runs
            .iter()
            .filter(|r| text(r, "scenario") == scenario)
            .map(|r| (text(r, "scheduler"), r["repeat"].as_u64().unwrap_or(99)))
            .collect();
        assert_eq!(order, [("os", 0), ("static", 0), ("static", 1), ("os", 1)]);
    }

    // Statistics recomputed from the runs: with two values the median is
    // their mean and the sample deviation |a - b| / sqrt(2).
    let median_of = |scenario: &str, scheduler: &str| {
        let walls: Vec<f64> = runs
            .iter()
            .filter(|r| text(r, "scenario") == scenario && text(r, "scheduler") == scheduler)
            .map(|r| number(r, "completion_s"))
            .collect();
        assert_eq!(walls.len(), 2);
        (walls[0], walls[1])
    };
    for s in summary {
        let (scenario, scheduler) = (text(s, "scenario"), text(s, "scheduler"));
        assert_eq!(text(s, "workload"), "aco");
        let (a, b) = median_of(scenario, scheduler);
        assert!(close(number(s, "median_s"), (a + b) / 2.0), "{s}");
        assert!(close(number(s, "mean_s"), (a + b) / 2.0), "{s}");
        assert!(close(number(s, "dev_s"), (a - b).abs() / 2f64.sqrt()), "{s}");
        let (oa, ob) = median_of(scenario, "os");
        let os_median = (oa + ob) / 2.0;
        let expected = 100.0 * ((a + b) / 2.0 - os_median) / os_median;
        assert!(close(number(s, "diff_vs_os_pct"), expected), "{s}");
    }

    let markdown = std::fs::read_to_string(&md_path).expect("markdown written");
    assert!(markdown.contains("## aco"), "{markdown}");
    assert!(markdown.contains("| C.2 | static | 2 |"), "{markdown}");
    assert!(
        markdown.contains("`pinlearn work aco --iterations 4000 --ants 8`"),
        "{markdown}"
    );
}

#[test]
fn best_static_searches_pins_and_plots() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json_path = dir.path().join("bench.json");
    let plot_path = dir.path().join("bench.svg");
    bench(&[
        "--workload",
        "aco",
        "--workload-args",
        "--iterations 6000 --ants 8",
        "--scenarios",
        "C.2",
        "--schedulers",
        "os,best-static",
        "--repeat",
        "1",
        "--json",
        json_path.to_str().expect("utf-8 path"),
        "--plot",
        plot_path.to_str().expect("utf-8 path"),
        "--quiet",
    ]);
    let doc = read_json(&json_path);

    let cores = doc["setup"]["cores"].as_u64().expect("cores") as usize;
    // The host's CPU and caches, where the machine tells them (null where not).
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if cpuinfo.lines().any(|line| line.starts_with("model name")) {
        assert!(
            doc["setup"]["cpu_model"]
                .as_str()
                .is_some_and(|model| !model.is_empty()),
            "{}",
            doc["setup"]
        );
    }
    if std::path::Path::new("/sys/devices/system/cpu/cpu0/cache/index0/size").exists() {
        assert!(
            doc["setup"]["last_level_cache_mib"].as_u64().is_some(),
            "{}",
            doc["setup"]
        );
    }
    let calibration = &doc["calibration"][0];
    let workers = calibration["worker_threads"].as_array().expect("worker names");
    assert_eq!(workers.len(), cores, "C: one aco thread per core");
    assert!(
        workers
            .iter()
            .all(|n| n.as_str().is_some_and(|n| n.starts_with("aco-")))
    );

    let search = &doc["best_static"][0];
    let tried = search["tried"].as_array().expect("tried list");
    // One class of `cores` threads over `cores` cores, halves not exchangeable
    // under C.2's load: C(2 cores - 1, cores - 1) splits (3 on 2 cores).
    if cores == 2 {
        assert_eq!(tried.len(), 3, "{search}");
    }
    let fastest = tried
        .iter()
        .min_by(|a, b| {
            a[1].as_f64()
                .unwrap_or(f64::MAX)
                .total_cmp(&b[1].as_f64().unwrap_or(f64::MAX))
        })
        .expect("something tried");
    assert_eq!(search["chosen"], fastest[0]);

    let runs = doc["runs"].as_array().expect("runs");
    let best: Vec<&Value> = runs.iter().filter(|r| text(r, "scheduler") == "best-static").collect();
    assert_eq!(best.len(), 1);
    assert_eq!(best[0]["assignment"], search["chosen"]);
    assert!(best[0]["mean_speed"].is_null(), "no manager, no speed");

    for file in ["bench-aco-times.svg", "bench-aco-C.2-speed.svg"] {
        let svg = std::fs::read_to_string(dir.path().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(svg.contains("<svg"), "{file}");
    }
}

#[test]
fn no_heartbeats_reaches_every_workload_command() {
    let out = std::process::Command::new(pinlearn_binary())
        .args(["bench", "--dry-run", "--workload", "aco,stream", "--no-heartbeats"])
        .output()
        .expect("pinlearn bench");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let commands: Vec<&str> = text.lines().filter(|l| l.contains("pinlearn work")).collect();
    assert_eq!(commands.len(), 2, "{text}");
    assert!(commands.iter().all(|l| l.ends_with("--no-heartbeats")), "{text}");
}

#[test]
fn a_command_runs_as_the_workload_told_its_threads_and_timed_start_to_exit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("threads.log");
    let script = dir.path().join("solver.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$NTHREADS $1\" >> '{}'\nsleep 0.3\necho noise on stdout\n",
            log.display()
        ),
    )
    .expect("script written");
    let json_path = dir.path().join("bench.json");
    let command = format!("sh {} 'an argument'", script.display());
    bench(&[
        "--command",
        &command,
        "--threads-env",
        "NTHREADS",
        "--scenarios",
        "C.1",
        "--schedulers",
        "os,static",
        "--repeat",
        "2",
        "--json",
        json_path.to_str().expect("utf-8 path"),
        "--quiet",
    ]);
    let doc = read_json(&json_path);
    let runs = doc["runs"].as_array().expect("runs is a list");
    assert_eq!(runs.len(), 2 * 2);
    let threads = runs[0]["threads"].as_u64().expect("threads");
    for r in runs {
        assert_eq!(text(r, "workload"), "sh");
        // Start to exit: the program sleeps 0.3 s, and the manager's start
        // and end add little.
        let completion = number(r, "completion_s");
        assert!((0.3..5.0).contains(&completion), "{r}");
        assert_eq!(r["threads"].as_u64(), Some(threads));
    }
    // Every run, the calibration's too, got its thread count and its argument.
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .expect("the program ran")
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(lines.len(), 1 + 4, "{lines:?}");
    assert!(
        lines.iter().all(|l| *l == format!("{threads} an argument")),
        "{lines:?}"
    );
}

#[test]
fn a_command_refuses_best_static_and_an_empty_command_before_running() {
    for (args, needle) in [
        (
            vec!["--command", "sh -c true", "--schedulers", "os,best-static"],
            "best-static",
        ),
        (vec!["--command", "./no-such-solver 1"], "not a program here"),
        (vec!["--command", "  "], "empty"),
        (
            vec!["--command", "sh -c true", "--threads-env", "9X"],
            "environment variable",
        ),
    ] {
        let out = std::process::Command::new(pinlearn_binary())
            .arg("bench")
            .args(&args)
            .output()
            .expect("pinlearn bench");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }
}

#[test]
fn fib_runs_under_the_bubble_schedulers_on_synthetic_nodes_with_a_rules_file() {
    // Two of this machine's CPUs seen as two nodes: the scenarios' layout
    // comes from that topology, and every managed run gets it and, for the
    // bubble policies, the rules (`pinlearn run` refuses a rules file with
    // another policy, so a rules file given to os would fail the run).
    let cpus = std::process::Command::new("nproc").output().expect("nproc");
    let cpus: usize = String::from_utf8_lossy(&cpus.stdout).trim().parse().expect("a count");
    if cpus < 2 {
        eprintln!("skipped: needs two CPUs");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let rules = dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        "[[bubble]]\nname = \"left\"\nthreads = \"^fib-0\"\n[[bubble]]\nname = \"right\"\nthreads = \"^fib-1\"\n",
    )
    .expect("rules written");
    let json_path = dir.path().join("bench.json");
    bench(&[
        "--workload",
        "fib",
        "--workload-args",
        "--n 36",
        "--scenarios",
        "B.1",
        "--schedulers",
        "os,bubbles,bubbles+learn",
        "--topology",
        "node:2 core:1 pu:1",
        "--topology-map",
        "0-1",
        "--bubbles",
        rules.to_str().expect("utf-8 path"),
        "--repeat",
        "1",
        "--json",
        json_path.to_str().expect("utf-8 path"),
        "--quiet",
    ]);
    let doc = read_json(&json_path);
    assert_eq!(
        doc["setup"]["cores_per_node"],
        serde_json::json!([1, 1]),
        "{}",
        doc["setup"]
    );
    assert_eq!(text(&doc["setup"], "cpus"), "0-1");
    let runs = doc["runs"].as_array().expect("runs is a list");
    let schedulers: Vec<&str> = runs.iter().map(|r| text(r, "scheduler")).collect();
    assert_eq!(schedulers, ["os", "bubbles", "bubbles+learn"]);
    for r in runs {
        assert_eq!(text(r, "workload"), "fib");
        // B.1 on two cores: two threads per core, so four leaves.
        assert_eq!(r["threads"].as_u64(), Some(4), "{r}");
        assert!(number(r, "completion_s") > 0.0, "{r}");
    }
}

#[test]
fn a_memory_bound_workload_measures_the_memory_bandwidth_and_calibration_models_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json_path = dir.path().join("bench.json");
    let path = json_path.to_str().expect("utf-8 path");
    let plan = bench(&["--dry-run", "--workload", "stream,aco", "--scenarios", "C.1"]);
    assert!(plan.contains("stream: the memory bandwidth"), "{plan}");
    assert!(!plan.contains("aco: the memory bandwidth"), "{plan}");
    // Two runs of Linux alone at C.1 (after the calibration runs).
    let bench_once = |workload: &str, args: &str| {
        bench(&[
            "--workload",
            workload,
            "--workload-args",
            args,
            "--scenarios",
            "C.1",
            "--schedulers",
            "os",
            "--repeat",
            "2",
            "--json",
            path,
            "--quiet",
        ])
    };
    bench_once("stream", "--size auto --gigabytes 6");
    let doc = read_json(&json_path);
    let measured = &doc["setup"]["memory_bandwidth"];
    assert_eq!(text(measured, "workload"), "stream");
    // --repeat 2: two runs on one core, two on the node, and the medians' ratio.
    let times = |key: &str| -> Vec<f64> {
        measured[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key} is a list in {measured}"))
            .iter()
            .map(|t| t.as_f64().expect("seconds"))
            .collect()
    };
    let (one_core, node) = (times("one_core_s"), times("node_s"));
    assert_eq!((one_core.len(), node.len()), (2, 2), "{measured}");
    assert!(one_core.iter().chain(&node).all(|&t| t > 0.0), "{measured}");
    let mean = |pair: &[f64]| (pair[0] + pair[1]) / 2.0;
    assert!(
        close(number(measured, "cores_worth"), mean(&one_core) / mean(&node)),
        "{measured}"
    );

    let calibrate = |extra: &[&str]| {
        let output = std::process::Command::new(pinlearn_binary())
            .args(["sim", "--calibrate", path, "--seeds", "1"])
            .args(extra)
            .output()
            .expect("pinlearn sim");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).expect("utf-8")
    };
    let modelled = format!(
        "memory bandwidth {:.2} cores' worth a node",
        number(measured, "cores_worth")
    );
    assert!(
        calibrate(&[]).contains(&modelled),
        "the bench's measurement: {modelled}"
    );
    assert!(calibrate(&["--memory-bandwidth", "off"]).contains("memory bandwidth unlimited"));
    assert!(calibrate(&["--memory-bandwidth", "0.8"]).contains("memory bandwidth 0.80 cores' worth a node"));

    // A workload that is not memory bound measures nothing.
    bench_once("aco", "--iterations 500 --ants 8");
    assert!(read_json(&json_path)["setup"]["memory_bandwidth"].is_null());
}
