//! `--policy bubbles` on the real machine: a rules file puts the threads of
//! an unmodified program (the heat workload, heartbeats off) in bubbles, and
//! the bubbles land on the synthetic nodes made of real CPUs; bad rules are
//! refused before anything runs.

mod common;

use common::*;
use std::sync::Mutex;

/// These tests place a running program on the real CPUs: one at a time, or
/// each one's program would be the other's load.
static MACHINE: Mutex<()> = Mutex::new(());

/// Two bubbles of two heat threads each, held whole down to the nodes.
const RULES: &str = r#"
[[bubble]]
name = "top"
threads = "^heat-[01]$"
burst = "node"

[[bubble]]
name = "bottom"
threads = "^heat-[23]$"
burst = "node"
"#;

/// `run` / `attach` options: `--policy bubbles` with the rules file
/// `rules`, the two CPUs `map` as two nodes, a trace to `trace`.
fn bubbles_on_two_nodes<'a>(rules: &'a str, map: &'a str, trace: &'a str) -> [&'a str; 11] {
    [
        "--quiet",
        "--policy",
        "bubbles",
        "--bubbles",
        rules,
        "--topology",
        "node:2 core:1 pu:1",
        "--topology-map",
        map,
        "--trace",
        trace,
    ]
}

/// A directory holding `RULES` and a config turning the guard off, and
/// their paths.
fn rules_without_guard() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(&rules, RULES).unwrap();
    let config = dir.path().join("noguard.toml");
    std::fs::write(&config, "[learn.guard]\nenabled = false\n").unwrap();
    (dir, rules, config)
}

#[test]
fn a_rules_file_puts_each_bubble_of_heat_threads_on_a_node_of_its_own() {
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    let Some(cpus) = first_two_cpus() else {
        return;
    };
    // The guard would give Linux the first windows: this test looks at the
    // bubbles' own placement.
    let (dir, rules, config) = rules_without_guard();
    let trace = dir.path().join("trace.csv");
    let exe = env!("CARGO_BIN_EXE_pinlearn");
    let map = cpus.join(",");
    let out = run_json(&[
        "run",
        "--policy",
        "bubbles",
        "--bubbles",
        rules.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--topology",
        "node:2 core:1 pu:1",
        "--topology-map",
        &map,
        "--trace",
        trace.to_str().unwrap(),
        "--",
        exe,
        "work",
        "heat",
        "--threads",
        "4",
        "--steps",
        "600",
        "--no-heartbeats",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // Once every heat thread is in its bubble and the young threads have
    // settled (names settle, the bubble joined, then SETTLING_PERIODS in
    // which a young bubble is placed afresh: on a busy machine the threads
    // name themselves a period or two late), every heat thread sits on its
    // bubble's node, and the two bubbles on different ones.
    let mut reader = csv::Reader::from_path(&trace).expect("trace");
    let header = reader.headers().unwrap().clone();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let (period, name, place, bubble) = (col("period"), col("name"), col("place"), col("bubble"));
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    let all_in = rows
        .iter()
        .filter(|row| row[name].starts_with("heat-") && !row[bubble].is_empty())
        .map(|row| row[period].parse::<u64>().unwrap())
        .fold(std::collections::BTreeMap::<u64, usize>::new(), |mut count, period| {
            *count.entry(period).or_default() += 1;
            count
        })
        .into_iter()
        .find(|&(_, threads)| threads == 4)
        .map(|(period, _)| period)
        .expect("all four heat threads in their bubbles");
    let settled = all_in + u64::from(pinlearn_policy::SETTLING_PERIODS);
    let mut seen = 0;
    for row in &rows {
        let thread = &row[name];
        if !thread.starts_with("heat-") || row[period].parse::<u64>().unwrap() < settled {
            continue;
        }
        let expected_bubble = if matches!(thread, "heat-0" | "heat-1") {
            "top"
        } else {
            "bottom"
        };
        assert_eq!(&row[bubble], expected_bubble, "{row:?}");
        assert!(
            cpus.iter().any(|c| *c == row[place]),
            "{thread} is not on one node's CPU: {row:?}"
        );
        seen += 1;
    }
    assert!(seen >= 8, "too few periods traced: {seen}");
    let places = |names: [&str; 2]| -> std::collections::BTreeSet<String> {
        let mut reader = csv::Reader::from_path(&trace).unwrap();
        reader
            .records()
            .map(|r| r.unwrap())
            .filter(|r| names.contains(&&r[name]) && r[period].parse::<u64>().unwrap() >= settled)
            .map(|r| r[place].to_string())
            .collect()
    };
    let (top, bottom) = (places(["heat-0", "heat-1"]), places(["heat-2", "heat-3"]));
    assert_eq!(top.len(), 1, "top moved or split: {top:?}");
    assert_eq!(bottom.len(), 1, "bottom moved or split: {bottom:?}");
    assert_ne!(top, bottom, "both bubbles on one node");

    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("summary");
    assert_eq!(summary["policy"], "bubbles");
    let threads = summary["threads"].as_array().expect("threads");
    let in_bubbles = threads.iter().filter(|t| t.get("bubble").is_some()).count();
    assert_eq!(in_bubbles, 4, "{summary}");
}

#[test]
fn bad_rules_are_refused_before_anything_runs() {
    let Some(map) = first_two_cpus() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let good = write("good.toml", RULES);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--bubbles".into(), good.clone()],
            "--bubbles is read by the bubbles policy, not by learn",
        ),
        (
            vec![
                "--policy".into(),
                "bubbles".into(),
                "--bubbles".into(),
                write("bad.toml", "[[bubble]\n"),
            ],
            "bubbles file",
        ),
        (
            vec![
                "--policy".into(),
                "bubbles".into(),
                "--bubbles".into(),
                write("l3.toml", "[[bubble]]\nname = \"a\"\nthreads = \"x\"\nburst = \"l3\"\n"),
                "--topology".into(),
                "node:2 core:1 pu:1".into(),
                "--topology-map".into(),
                map.join(","),
            ],
            "opens at level l3, which this topology lacks",
        ),
        (
            vec![
                "--policy".into(),
                "bubbles".into(),
                "--bubbles".into(),
                dir.path().join("missing.toml").to_str().unwrap().into(),
            ],
            "cannot read bubbles file",
        ),
    ];
    for (flags, expected) in cases {
        let mut args: Vec<String> = vec!["run".into()];
        args.extend(flags);
        args.extend(["--".into(), "touch".into(), marker.to_str().unwrap().into()]);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&refs);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(!marker.exists(), "the program ran despite {args:?}");
    }
}

#[test]
fn auto_process_gives_each_process_of_a_multi_process_job_its_own_node() {
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    // An MPI-style job: a launcher starting two single-worker processes.
    // With auto = "process", each process is a bubble nested in the
    // launcher's; once the processes' main threads block, each process
    // fits a node, and the two workers end on different nodes and stay.
    let Some(cpus) = first_two_cpus() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("auto.toml");
    std::fs::write(&rules, "auto = \"process\"\n").unwrap();
    let config = dir.path().join("noguard.toml");
    std::fs::write(&config, "[learn.guard]\nenabled = false\n").unwrap();
    let trace = dir.path().join("trace.csv");
    let exe = env!("CARGO_BIN_EXE_pinlearn");
    let worker = format!("{exe} work blackscholes --threads 1 --runs 1200 --no-heartbeats --quiet");
    let launcher = format!("{worker} & {worker} & wait");
    let map = cpus.join(",");
    let mut args = vec!["run"];
    args.extend(bubbles_on_two_nodes(
        rules.to_str().unwrap(),
        &map,
        trace.to_str().unwrap(),
    ));
    args.extend(["--config", config.to_str().unwrap(), "--", "sh", "-c", &launcher]);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let mut reader = csv::Reader::from_path(&trace).expect("trace");
    let header = reader.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (period, pid, name, place, bubble) = (col("period"), col("pid"), col("name"), col("place"), col("bubble"));
    let mut workers: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> = Default::default();
    let mut late_rows = 0;
    for row in reader.records().map(|r| r.unwrap()) {
        if row[name] != *"blackscholes-0" {
            continue;
        }
        assert_eq!(row[bubble], format!("process {}", &row[pid]), "{row:?}");
        // From period 16 on: main threads are quiet (10 periods) and the
        // spread settled.
        if row[period].parse::<u64>().unwrap() >= 16 {
            workers
                .entry(row[pid].to_string())
                .or_default()
                .insert(row[place].to_string());
            late_rows += 1;
        }
    }
    assert!(late_rows >= 10, "the job ran too short to see: {late_rows} rows");
    assert_eq!(workers.len(), 2, "two worker processes: {workers:?}");
    let places: Vec<&std::collections::BTreeSet<String>> = workers.values().collect();
    assert!(places.iter().all(|p| p.len() == 1), "a worker moved: {workers:?}");
    assert_ne!(places[0], places[1], "both workers on one node: {workers:?}");
    assert!(
        places.iter().all(|p| cpus.contains(p.iter().next().unwrap())),
        "{workers:?}"
    );
}

#[test]
fn status_shows_where_the_bubbles_of_a_supervised_program_are_while_it_runs() {
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    let Some(cpus) = first_two_cpus() else {
        return;
    };
    let (_dir, rules, config) = rules_without_guard();
    let heat = pinlearn()
        .args([
            "work",
            "heat",
            "--threads",
            "4",
            "--rows",
            "256",
            "--steps",
            "1000000",
            "--no-heartbeats",
            "--quiet",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start heat");
    let target = heat.id();
    let heat = Guard(heat);
    wait_until(std::time::Duration::from_secs(5), || masks(target).len() >= 5);
    let pid = target.to_string();
    let map = cpus.join(",");
    let manager = pinlearn()
        .args([
            "attach",
            "--policy",
            "bubbles",
            "--bubbles",
            rules.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
            "--topology",
            "node:2 core:1 pu:1",
            "--topology-map",
            &map,
            "--duration",
            "4s",
            &pid,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("attach");
    // Once the names settled and the spread ran, the status holds both
    // bubbles, each on one node, with its two threads.
    let mut shown = String::new();
    wait_until(std::time::Duration::from_secs(4), || {
        let out = run(&["status", &pid]);
        shown = String::from_utf8_lossy(&out.stdout).into_owned();
        out.status.success() && shown.contains("bubble top  CPUs") && shown.contains("bubble bottom  CPUs")
    });
    let line = |bubble: &str| -> String {
        shown
            .lines()
            .find(|l| l.starts_with(&format!("bubble {bubble}  CPUs ")))
            .unwrap_or_else(|| panic!("no bubble {bubble}: {shown}"))
            .rsplit(' ')
            .next()
            .unwrap()
            .to_string()
    };
    let (top, bottom) = (line("top"), line("bottom"));
    assert!(
        cpus.contains(&top) && cpus.contains(&bottom) && top != bottom,
        "{shown}"
    );
    for thread in ["heat-0", "heat-1", "heat-2", "heat-3"] {
        assert!(
            shown.contains(&format!("  {thread} (tid ")),
            "{thread} missing: {shown}"
        );
    }
    let json = run(&["status", "--json", "-", &pid]);
    let status: serde_json::Value = serde_json::from_slice(&json.stdout).expect("status JSON");
    assert_eq!(status["target"].as_u64(), Some(u64::from(target)));
    assert_eq!(status["policy"], "bubbles");

    let out = manager.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The supervision ended: its status went with it.
    let after = run(&["status", &pid]);
    assert_eq!(after.status.code(), Some(2), "{}", stderr(&after));
    assert!(
        stderr(&after).contains("no pinlearn supervises process"),
        "{}",
        stderr(&after)
    );
    drop(heat);
}

#[test]
fn bubbles_and_learning_move_a_bubble_off_a_node_another_program_loads() {
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    // One worker thread in a bubble of its own, the two CPUs seen as two
    // nodes, another session's busy loop on the second. The spread puts the
    // program's main thread on the first node and the bubble on the second
    // (it cannot see the loop); once the main thread is seen blocked in
    // join, a NUMA tick (every 1 s here) of bubbles+learn moves the bubble
    // to the first node, and the next keeps it there (it runs faster). The
    // nodes are groups of CPUs of one memory node: no memory stays behind,
    // so `remote_cost = 1`.
    let Some([first, second]) = first_two_cpus() else {
        return;
    };
    let _hog = Guard(
        pinlearn()
            .args(["load", "--setsid", "--cpus", &second])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("start the hog"),
    );
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    // Placed after the main thread (priority -1), so on the second node.
    std::fs::write(
        &rules,
        "[[bubble]]\nname = \"worker\"\nthreads = \"^blackscholes-0$\"\npriority = -1\n",
    )
    .unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "remote_cost = 1.0\n[learn.guard]\nenabled = false\n[learn.numa]\nperiod_s = 1.0\n[learn.crowd]\nforget_s = 2.0\n",
    )
    .unwrap();
    let trace = dir.path().join("trace.csv");
    let exe = env!("CARGO_BIN_EXE_pinlearn");
    let out = run(&[
        "run",
        "--quiet",
        "--policy",
        "bubbles+learn",
        "--bubbles",
        rules.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--topology",
        "node:2 core:1 pu:1",
        "--topology-map",
        &format!("{first},{second}"),
        "--trace",
        trace.to_str().unwrap(),
        "--",
        exe,
        "work",
        "blackscholes",
        "--threads",
        "1",
        "--runs",
        "3000",
        "--no-heartbeats",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let mut reader = csv::Reader::from_path(&trace).expect("trace");
    let header = reader.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (time, name, place) = (col("time_s"), col("name"), col("place"));
    let rows: Vec<(f64, String)> = reader
        .records()
        .map(|r| r.unwrap())
        .filter(|r| r[name] == *"blackscholes-0")
        .map(|r| (r[time].parse().unwrap(), r[place].to_string()))
        .collect();
    assert!(
        rows.iter().any(|(t, p)| *t < 1.0 && *p == second),
        "the spread put the bubble on the loaded node first: {rows:?}"
    );
    // A tick moves the bubble once the first node looks idle: at once, or
    // once a load measured there while the threads started (the main
    // thread beside the worker) is forgotten (`forget_s`, 2 s); the next
    // tick keeps it there. The load on the second node is forgotten too
    // (2 s after the bubble left it), so where something else takes a
    // moment of the first CPU just then (once in CI, at 4 s), a tick may
    // look again at the second node; the speed measured there brings the
    // bubble back at the next tick (1 s). So: from 4.5 s on, at least
    // three quarters of the time on the first node, never more than one
    // tick in a row on the loaded one, and there at the end.
    let late: Vec<&(f64, String)> = rows.iter().filter(|(t, _)| *t >= 4.5).collect();
    assert!(late.len() >= 10, "the worker ran too short to see: {rows:?}");
    let on_first = late.iter().filter(|(_, p)| *p == first).count();
    assert!(
        4 * on_first >= 3 * late.len(),
        "moved to the idle node and kept there: {rows:?}"
    );
    let mut back_since: Option<f64> = None;
    for (t, p) in &late {
        if *p == first {
            back_since = None;
        } else {
            let since = *back_since.get_or_insert(*t);
            assert!(
                t - since < 1.2,
                "back on the loaded node for more than a tick, from {since} s: {rows:?}"
            );
        }
    }
    assert_eq!(
        late.last().map(|(_, p)| p),
        Some(&first),
        "ended on the idle node: {rows:?}"
    );
}

#[test]
fn a_process_tree_rule_holds_every_process_its_launcher_starts() {
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    // A launcher started outside pinlearn, attached to by PID: its worker
    // processes, started after the attach, go in the bubble whose
    // `process_trees` names the launcher, which no name or PID of theirs
    // matches.
    let Some(cpus) = first_two_cpus() else {
        return;
    };
    let exe = env!("CARGO_BIN_EXE_pinlearn");
    let worker = format!("{exe} work blackscholes --threads 1 --runs 1200 --no-heartbeats --quiet");
    // Wait for the attach (a file appears), then start two workers.
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let launcher_script = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; {worker} & {worker} & wait",
        go.display()
    );
    let launcher = Guard(
        std::process::Command::new("sh")
            .args(["-c", &launcher_script])
            .spawn()
            .expect("sh starts"),
    );
    let rules = dir.path().join("tree.toml");
    std::fs::write(
        &rules,
        format!("[[bubble]]\nname = \"job\"\nprocess_trees = [{}]\n", launcher.0.id()),
    )
    .unwrap();
    let trace = dir.path().join("trace.csv");
    let map = cpus.join(",");
    let launcher_pid = launcher.0.id().to_string();
    let mut attach = Guard(
        pinlearn()
            .arg("attach")
            .args(bubbles_on_two_nodes(
                rules.to_str().unwrap(),
                &map,
                trace.to_str().unwrap(),
            ))
            .args(["--duration", "3s", &launcher_pid])
            .spawn()
            .expect("pinlearn attach starts"),
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    std::fs::write(&go, "").unwrap();
    let status = attach.0.wait().expect("attach ends");
    assert!(status.success(), "attach failed: {status}");

    let mut reader = csv::Reader::from_path(&trace).expect("trace");
    let header = reader.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (pid, name, bubble) = (col("pid"), col("name"), col("bubble"));
    let mut workers = std::collections::BTreeSet::new();
    for row in reader.records().map(|r| r.unwrap()) {
        if row[name] == *"blackscholes-0" {
            assert_eq!(&row[bubble], "job", "{row:?}");
            workers.insert(row[pid].to_string());
        }
    }
    assert_eq!(workers.len(), 2, "both workers seen: {workers:?}");
}
