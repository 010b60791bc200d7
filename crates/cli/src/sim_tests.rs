//! `pinlearn sim` as a command: options, errors, and reproducible output.

use super::*;
use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    sim: SimArgs,
}

fn parse(args: &[&str]) -> Result<SimArgs, String> {
    let mut argv = vec!["sim"];
    argv.extend_from_slice(args);
    Cli::try_parse_from(argv).map(|cli| cli.sim).map_err(|e| e.to_string())
}

fn command(args: &[&str]) -> SimArgs {
    parse(args).expect("valid options")
}

const SMALL: [&str; 10] = [
    "--topology",
    "node:2 core:3 pu:1",
    "--threads",
    "8",
    "--duration",
    "5s",
    "--seeds",
    "2",
    "--quiet",
    "--jobs=2",
];

#[test]
fn same_seed_gives_identical_json() {
    let dir = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    for (name, seed) in [("a.json", 1), ("b.json", 1), ("c.json", 7)] {
        let path = dir.path().join(name);
        let config = dir.path().join(format!("{name}.toml"));
        std::fs::write(&config, format!("seed = {seed}\n")).unwrap();
        let mut args = SMALL.to_vec();
        let path_text = path.to_str().unwrap().to_string();
        let config_text = config.to_str().unwrap().to_string();
        args.extend([
            "--scenarios",
            "B.2,D",
            "--workload",
            "barrier",
            "--schedulers",
            "os,static,best-static,learn",
        ]);
        args.extend(["--json", &path_text, "--config", &config_text]);
        run(&command(&args)).unwrap();
        outputs.push(std::fs::read_to_string(&path).unwrap());
    }
    assert_eq!(outputs[0], outputs[1], "same seed, same bytes");
    assert_ne!(outputs[0], outputs[2], "another seed changes the learner's runs");

    let report: serde_json::Value = serde_json::from_str(&outputs[0]).unwrap();
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2 * 4 * 2, "scenarios x schedulers x seeds");
    for run in runs {
        for field in [
            "scenario",
            "scheduler",
            "seed",
            "completion_s",
            "repeat",
            "mean_speed",
            "makespan",
            "optimal_makespan",
        ] {
            assert!(run.get(field).is_some(), "{field} missing in {run}");
        }
        assert!(run["completion_s"].as_f64().is_some(), "{run}");
    }
    let b2_best = runs
        .iter()
        .find(|r| r["scenario"] == "B.2" && r["scheduler"] == "best-static")
        .unwrap();
    assert_eq!(b2_best["makespan"], b2_best["optimal_makespan"]);
    let d_run = runs.iter().find(|r| r["scenario"] == "D").unwrap();
    assert!(d_run["makespan"].is_null(), "no makespan under time-varying load");
    assert_eq!(d_run["seed"].as_u64(), Some(1));
}

#[test]
fn bad_names_are_one_line_bad_input_errors() {
    // Refused while parsing the flags: the shared parsers' words.
    for (args, needle) in [
        (vec!["--scenarios", "A.1,Z.9"], "unknown scenario \"Z.9\""),
        (vec!["--schedulers", "os,fastest"], "unknown scheduler \"fastest\""),
        (vec!["--schedulers", "learn:best"], "unknown objective"),
        (vec!["--duration=-1s"], "--duration"),
        (vec!["--duration", "5"], "unit is missing"),
        (vec!["--weights", "1,x"], "--weights"),
        (vec!["--interval", "fast"], "invalid duration"),
        (vec!["--numa-balancing", "0s"], "a positive time"),
        (vec!["--numa-balancing", "on"], "--numa-balancing"),
        (vec!["--rotate-after", "0ms"], "a positive time"),
        (vec!["--rotate-after", "never"], "--rotate-after"),
        (vec!["--memory-bandwidth", "0"], "a positive number"),
        (vec!["--memory-bandwidth", "inf"], "a positive number"),
        (vec!["--memory-bandwidth", "lots"], "a positive number"),
        (vec!["--trace", "t.csv", "--calibrate", "b.json"], "cannot be used with"),
    ] {
        let err = parse(&args).expect_err(needle);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // Refused by the plan, before anything runs.
    for (args, needle) in [
        (vec!["--threads", "0"], "--threads 0"),
        (vec!["--weights", "1,-2"], "--weights"),
        (vec!["--topology", "bogus:3"], "invalid synthetic topology"),
        (vec!["--numa-factor", "0.5"], "--numa-factor"),
        (vec!["--grain", "0s"], "--grain"),
        (vec!["--round-jitter", "1"], "--round-jitter 1 is out of range"),
        (vec!["--plot-scenario", "C.3", "--scenarios", "A.1"], "not among"),
        (vec!["--json", "/nonexistent-dir/x.json"], "does not exist"),
        (
            vec!["--trace", "t.csv"],
            "--trace records one run, and these options make 48",
        ),
        (
            vec![
                "--trace",
                "/nonexistent-dir/t.csv",
                "--scenarios",
                "C.1",
                "--schedulers",
                "os",
                "--seeds",
                "1",
            ],
            "does not exist",
        ),
    ] {
        let err: Failure = run(&command(&args)).expect_err(needle);
        let text = err.to_string();
        assert!(text.contains(needle), "{args:?}: {text}");
        assert!(!text.contains('\n'), "{text}");
        assert_eq!(err.status(), 2, "{args:?}");
    }
}

#[test]
fn the_alternating_load_runs_on_one_node_too() {
    // D moves the load between the halves of a one-node machine, as bench does.
    let args = [
        "--topology",
        "node:1 core:2 pu:1",
        "--threads",
        "4",
        "--duration",
        "2s",
        "--seeds",
        "1",
        "--quiet",
        "--scenarios",
        "D,A.D",
        "--schedulers",
        "os",
    ];
    run(&command(&args)).expect("D runs on one node");
}

#[test]
fn the_dry_run_describes_the_plan_and_runs_nothing() {
    let options = command(&[
        "--topology",
        "node:2 core:4 pu:1",
        "--threads",
        "8",
        "--scenarios",
        "C.2,D",
    ])
    .to_options()
    .expect("valid");
    let text = options.plan().expect("valid").describe(2);
    assert!(
        text.contains("node:2 core:4 pu:1 (8 cores), 8 independent threads"),
        "{text}"
    );
    assert!(text.contains("C.2 (1 thread per core"), "{text}");
    assert!(
        text.contains("load (same session, weight 2) from 0.0 s: cores 0-1,4-5"),
        "{text}"
    );
    // In its own session the load weighs one group, split over the cores it loads.
    let own = command(&[
        "--topology",
        "node:2 core:4 pu:1",
        "--threads",
        "8",
        "--scenarios",
        "C.2",
        "--load-session",
        "own",
    ])
    .to_options()
    .expect("valid");
    let text_own = own.plan().expect("valid").describe(2);
    assert!(
        text_own.contains("load (own session, weight 1) from 0.0 s"),
        "{text_own}"
    );
    assert!(text.contains("D (2 threads per core"), "{text}");
    assert!(text.contains("from 20.0 s: cores 2-3"), "{text}");
    assert!(text.contains("24 runs on 2 thread(s)"), "{text}");
    assert!(text.contains("the program reports nothing"), "{text}");
}

#[test]
fn one_run_s_trace_has_the_rows_of_pinlearn_run_and_the_guard_s_arms() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, json) = (dir.path().join("trace.csv"), dir.path().join("run.json"));
    let (trace_text, json_text) = (trace.to_str().unwrap(), json.to_str().unwrap());
    // The small machine, one seed.
    let mut args = SMALL.to_vec();
    let seeds = args.iter().position(|arg| *arg == "--seeds").unwrap();
    args[seeds + 1] = "1";
    args.extend(["--scenarios", "C.2", "--schedulers", "learn"]);
    args.extend(["--trace", trace_text, "--json", json_text]);
    run(&command(&args)).unwrap();
    let text = std::fs::read_to_string(&trace).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(pinlearn_engine::Trace::HEADER.join(",").as_str()));
    let rows: Vec<Vec<&str>> = lines.map(|line| line.split(',').collect()).collect();
    let column = |name: &str| pinlearn_engine::Trace::HEADER.iter().position(|h| *h == name).unwrap();
    let (time, tid, arm) = (column("time_s"), column("tid"), column("arm"));
    let tids: std::collections::BTreeSet<&str> = rows.iter().map(|row| row[tid]).collect();
    assert_eq!(tids.len(), 8, "every simulated thread: {tids:?}");
    // Linux places first, then the learner's probes: the guard's arms.
    for expected in ["os", "learn"] {
        assert!(
            rows.iter().any(|row| row[arm] == expected),
            "{expected} places some period"
        );
    }
    assert!(rows.iter().all(|row| row[arm] == "os" || row[arm] == "learn"));
    // The rows go on until the run ends.
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let completion = report["runs"][0]["completion_s"].as_f64().unwrap();
    let last: f64 = rows.last().unwrap()[time].parse().unwrap();
    assert!(
        completion - last <= 0.05 + 1e-9 && last <= completion,
        "last row {last}, completion {completion}"
    );
}

#[test]
fn the_plot_has_a_line_per_scheduler() {
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("speed.svg");
    let plot_text = plot.to_str().unwrap().to_string();
    let mut args = SMALL.to_vec();
    args.extend(["--scenarios", "A.3,C.2", "--plot-scenario", "C.2", "--plot", &plot_text]);
    args.extend(["--schedulers", "os,learn:own", "--metric", "heartbeat"]);
    run(&command(&args)).unwrap();
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(
        svg.contains("C.2") && svg.contains("learn:own") && svg.contains("\nos\n"),
        "legend and title"
    );
    assert!(svg.contains("heartbeat"), "the metric labels the axis");
}

#[test]
fn a_run_that_hits_the_horizon_is_reported_unfinished() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("runs.json");
    let json_text = json.to_str().unwrap().to_string();
    // Round-robin pins threads onto cores shared with a load of weight 1000:
    // they would need ~1000 times the nominal second.
    let args = [
        "--topology",
        "node:1 core:2 pu:1",
        "--threads",
        "2",
        "--duration",
        "1s",
        "--seeds",
        "1",
        "--quiet",
        "--scenarios",
        "C.2",
        "--schedulers",
        "static,os",
        "--background",
        "1000",
        "--json",
        &json_text,
    ];
    run(&command(&args)).unwrap();
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs = report["runs"].as_array().unwrap();
    let static_run = &runs[0];
    assert_eq!(static_run["scheduler"], "static");
    assert!(static_run["completion_s"].is_null(), "{static_run}");
    assert_eq!(static_run["periods"], 401, "20 x 1 s at 50 ms, plus the first step");
    // The OS moves the thread off the loaded core and finishes.
    assert!(runs[1]["completion_s"].as_f64().is_some(), "{}", runs[1]);
}

#[test]
fn by_default_the_program_reports_nothing_and_heartbeats_report_its_progress() {
    let silent = command(&[]).to_options().expect("options");
    assert!(!silent.workload.heartbeats, "a program nobody changed reports nothing");
    let beating = command(&["--heartbeats"]).to_options().expect("options");
    assert!(beating.workload.heartbeats);
    // The guard compares another measure, so the learner's runs differ
    // (Linux's and the pin's do not: nothing places them by it). Where
    // the load moves (D), its windows decide differently by the measure;
    // at A.2 here its probes come on the budget's pace either way.
    let dir = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    for (name, extra) in [("silent.json", None), ("beating.json", Some("--heartbeats"))] {
        let path = dir.path().join(name).to_str().unwrap().to_string();
        let mut args = vec![
            "--topology",
            "node:2 core:3 pu:1",
            "--threads",
            "8",
            "--seeds",
            "1",
            "--quiet",
            "--scenarios",
            "D",
            "--workload",
            "barrier",
            "--schedulers",
            "os,learn",
            "--duration",
            "30s",
            "--json",
            &path,
        ];
        args.extend(extra);
        run(&command(&args)).unwrap();
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(json["workload"]["heartbeats"], extra.is_some(), "the JSON says which");
        outputs.push(json["runs"].as_array().unwrap().clone());
    }
    let of = |runs: &[serde_json::Value], scheduler: &str| -> Vec<f64> {
        runs.iter()
            .filter(|r| r["scheduler"] == scheduler)
            .map(|r| r["completion_s"].as_f64().unwrap())
            .collect()
    };
    assert_eq!(of(&outputs[0], "os"), of(&outputs[1], "os"));
    assert_ne!(of(&outputs[0], "learn"), of(&outputs[1], "learn"));
}

/// The guard's hand-back: Linux's windows after a probe start from the
/// places Linux had, so probing costs about the probe budget. Before it,
/// the simulated Linux kept the learner's leftovers and the guarded learner
/// finished 7-26% after the OS on these cells (docs/simulator.md).
#[test]
fn the_guarded_learner_stays_near_the_os_where_the_os_is_right() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.json");
    let path_text = path.to_str().unwrap().to_string();
    run(&command(&[
        "--scenarios",
        "A.2,B.3,C.1,D",
        "--schedulers",
        "os,learn",
        "--duration",
        "300s",
        "--seeds",
        "1",
        "--quiet",
        "--jobs=2",
        "--json",
        &path_text,
    ]))
    .unwrap();
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let runs = json["runs"].as_array().unwrap();
    let record = |scenario: &str, scheduler: &str| {
        runs.iter()
            .find(|r| r["scenario"] == scenario && r["scheduler"] == scheduler)
            .unwrap_or_else(|| panic!("a {scheduler} run of {scenario}"))
    };
    let completion = |scenario: &str, scheduler: &str| {
        record(scenario, scheduler)["completion_s"]
            .as_f64()
            .unwrap_or_else(|| panic!("the {scheduler} run of {scenario} did not finish"))
    };
    for scenario in ["A.2", "B.3", "C.1", "D"] {
        let (os, learn) = (completion(scenario, "os"), completion(scenario, "learn"));
        assert!(learn <= 1.05 * os, "{scenario}: learn {learn:.1} s, os {os:.1} s");
        // Where the load is constant and the learner found nothing better
        // (C.1 here; at A.2 crowd moves beat the OS by 2.5%), Linux must
        // place the threads most of the time.
        let share = record(scenario, "learn")["os_share"].as_f64();
        assert!(
            matches!(scenario, "B.3" | "D") || learn < os || share.is_some_and(|s| s > 0.5),
            "{scenario}: Linux placed the threads in {share:?} of the periods"
        );
    }
}

#[test]
fn calibration_against_the_recorded_bench_prints_both_sides_and_the_agreement() {
    // The full matrix measured on this kind of machine (docs/results/bench-full.json).
    let bench = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/results/bench-full.json");
    let real = pinlearn_sim::calibrate::RealBench::parse(&std::fs::read_to_string(bench).expect("the recorded bench"))
        .expect("parses");
    let options = command(&["--seeds", "1"]).to_options().expect("options");
    let calibration =
        pinlearn_sim::calibrate::calibrate(&real, &options.settings, &options.params, 1, None).expect("calibrates");
    assert_eq!(calibration.topology, "node:1 core:2 pu:1");
    assert_eq!(calibration.cells.len(), 70, "7 workloads x 10 scenarios");
    let table = calibration.table();
    assert!(table.contains("of 70 cells agree"), "{table}");
    // Static pinning beside another session's load loses in the model where
    // it loses on the machine: independent work with load on half the cores.
    let cell = calibration
        .cells
        .iter()
        .find(|c| c.workload == "blackscholes" && c.scenario == "B.2")
        .expect("blackscholes B.2");
    let (real_static, sim_static) = cell.ratios["static"];
    assert!(real_static.unwrap() > 1.2 && sim_static.unwrap() > 1.1, "{cell:?}");
}

#[test]
fn two_real_runs_of_one_matrix_are_held_to_each_other_by_the_calibration_s_rule() {
    // The seven workloads' matrix measured twice with one build on 2026-12-06
    // (docs/simulator.md, "The machine against itself"): the second host's
    // Linux spread by 11% from one repeat to the next, the first's by 2%.
    let recorded = |name: &str| {
        let path = format!("{}/../../docs/results/{name}", env!("CARGO_MANIFEST_DIR"));
        pinlearn_sim::calibrate::RealBench::parse(&std::fs::read_to_string(&path).expect("the recorded bench"))
            .expect("parses")
    };
    let files = [
        recorded("bench-matrix-seven-2026-12-06.json"),
        recorded("bench-matrix-seven-2026-12-06-2.json"),
    ];
    let found = pinlearn_sim::calibrate::reproduction(&files).expect("one matrix on one kind of machine");
    let counts: Vec<(usize, usize, usize)> = found.iter().map(|f| (f.cells, f.agree, f.same_winner)).collect();
    assert_eq!(counts, [(70, 28, 51), (70, 27, 45)]);
    let options = command(&["--seeds", "1"]).to_options().expect("options");
    let pooled = files[0].clone().pool(files[1].clone()).expect("pools");
    let mut calibration =
        pinlearn_sim::calibrate::calibrate(&pooled, &options.settings, &options.params, 1, None).expect("calibrates");
    calibration.reproduction = found;
    let table = calibration.table();
    assert!(
        table.contains(
            "the real file of 2026-12-06T23:27:07Z against the other files by the same rule: 27 of 70 cells agree"
        ),
        "{table}"
    );
}
