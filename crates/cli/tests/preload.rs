//! `pinlearn run --preload`: the library in crate `pinlearn-preload` gives
//! unmodified programs heartbeats (OpenMP regions and barriers,
//! pthread_barrier_wait) and declares their thread-creation tree as nested
//! bubbles, without changing what the programs compute or how they end.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, Once};

/// These tests measure the machine: one at a time.
static MACHINE: Mutex<()> = Mutex::new(());

/// Builds the preload library beside this build's pinlearn binary (where
/// `run --preload` looks for it), once.
fn build_library() {
    static BUILT: Once = Once::new();
    BUILT.call_once(|| {
        let release = Path::new(env!("CARGO_BIN_EXE_pinlearn"))
            .parent()
            .is_some_and(|dir| dir.ends_with("release"));
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "pinlearn-preload"])
            .args(if release { vec!["--release"] } else { vec![] })
            .status()
            .expect("cargo build");
        assert!(status.success(), "cargo build -p pinlearn-preload failed");
    });
}

/// `tests/programs/NAME.c` of the engine crate built with gcc (`flags`) into `dir`.
fn build_program(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    build_with("gcc", dir, name, flags)
}

/// `tests/programs/NAME.c` of the engine crate built with `compiler` into `dir`.
fn build_with(compiler: &str, dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../engine/tests/programs/{name}.c"));
    let exe = dir.join(format!("{name}-{compiler}"));
    let out = Command::new(compiler)
        .args(["-O2", "-Wall", "-Werror"])
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(&source)
        .output()
        .unwrap_or_else(|e| panic!("{compiler} is installed (scripts/setup): {e}"));
    assert!(
        out.status.success(),
        "{compiler} failed on {}: {}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// The summary's threads of `summary` (a `run --json` file).
fn threads(summary: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(summary).expect("the run wrote its summary");
    let json: Value = serde_json::from_str(&text).expect("summary JSON");
    json["threads"].as_array().expect("threads").clone()
}

fn field<'a>(thread: &'a Value, name: &str) -> &'a str {
    thread[name].as_str().unwrap_or("")
}

#[test]
fn preloaded_openmp_threads_are_scored_by_their_barriers_and_compute_the_same() {
    // libgomp through its GOMP_* entry points.
    preloaded_stencil_beats("gcc");
}

#[test]
fn preloaded_llvm_openmp_threads_are_scored_by_their_barriers_and_compute_the_same() {
    // LLVM's libomp through the library's OMPT tool.
    preloaded_stencil_beats("clang");
}

fn preloaded_stencil_beats(compiler: &str) {
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    build_library();
    let dir = tempfile::tempdir().unwrap();
    let stencil = build_with(compiler, dir.path(), "omp_stencil", &["-fopenmp"]);
    let channels = dir.path().join("channels");
    std::fs::create_dir(&channels).unwrap();
    // About 1.3 s alone: runs of 0.45 s (4000 steps) left the main thread
    // of LLVM's libomp with fewer than 3 measured periods once in CI.
    let alone = Command::new(&stencil)
        .args(["512", "12000"])
        .env("OMP_NUM_THREADS", "2")
        .output()
        .unwrap();
    assert!(alone.status.success());

    let summary = dir.path().join("summary.json");
    let out = pinlearn()
        .args(["run", "--quiet", "--preload", "heartbeats", "--json"])
        .arg(&summary)
        .args(["--", stencil.to_str().unwrap(), "512", "12000"])
        .env("OMP_NUM_THREADS", "2")
        .env("PINLEARN_HEARTBEAT_DIR", &channels)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // The same checksum: the library changes nothing the program computes.
    assert_eq!(out.stdout, alone.stdout, "the preloaded run printed another result");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(
        json["metric"], "heartbeat",
        "--preload heartbeats learns from the beats"
    );
    let measured: Vec<Value> = threads(&summary)
        .into_iter()
        .filter(|t| t["periods"].as_u64().unwrap_or(0) >= 3)
        .collect();
    assert_eq!(measured.len(), 2, "both OpenMP threads were measured: {measured:?}");
    for thread in &measured {
        assert_eq!(
            field(thread, "source"),
            "heartbeat",
            "{thread}\nchannel dir: {:?}\nstderr: {}",
            std::fs::read_dir(&channels).map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>()),
            stderr(&out)
        );
    }
    // The channel went with the program.
    let left: Vec<_> = std::fs::read_dir(&channels)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "channels left behind: {left:?}");
}

/// Runs `program ARGS` with two OpenMP threads under `run --preload
/// heartbeats` and asserts that both threads were scored by heartbeats, and
/// that the program printed what it prints without pinlearn.
fn both_threads_beat(dir: &Path, program: &Path, args: &[&str]) {
    let plain = Command::new(program)
        .args(args)
        .env("OMP_NUM_THREADS", "2")
        .output()
        .unwrap();
    assert!(plain.status.success(), "{args:?} alone: {}", stderr(&plain));
    let summary = dir.join("summary.json");
    let out = pinlearn()
        .args(["run", "--quiet", "--preload", "heartbeats", "--json"])
        .arg(&summary)
        .arg("--")
        .arg(program)
        .args(args)
        .env("OMP_NUM_THREADS", "2")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    assert_eq!(out.stdout, plain.stdout, "{args:?}: the program's output changed");
    let measured: Vec<Value> = threads(&summary)
        .into_iter()
        .filter(|t| t["periods"].as_u64().unwrap_or(0) >= 3)
        .collect();
    assert_eq!(measured.len(), 2, "{args:?}: {measured:?}");
    for thread in &measured {
        assert_eq!(
            field(thread, "source"),
            "heartbeat",
            "{args:?}: {thread}\nstderr: {}",
            stderr(&out)
        );
    }
}

#[test]
fn barriers_inside_one_long_openmp_region_beat() {
    // One region for the whole run: the beats come from GOMP_barrier
    // (static loops) and GOMP_loop_end (dynamic loops), not from its end.
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    build_library();
    let dir = tempfile::tempdir().unwrap();
    let program = build_program(dir.path(), "omp_inner_loops", &["-fopenmp"]);
    both_threads_beat(dir.path(), &program, &[]);
    both_threads_beat(dir.path(), &program, &["dynamic"]);
}

#[test]
fn combined_parallel_loops_and_regions_of_gcc_before_4_9_beat() {
    // GOMP_parallel_loop_dynamic (beats from GOMP_loop_end_nowait) and the
    // GOMP_parallel_start / GOMP_parallel_end pair (the team's share by the
    // wrapped body, the starting thread's at the end).
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    build_library();
    let dir = tempfile::tempdir().unwrap();
    let program = build_program(dir.path(), "omp_region_forms", &["-fopenmp"]);
    let symbols = Command::new("nm").arg("-D").arg(&program).output().unwrap();
    let symbols = String::from_utf8_lossy(&symbols.stdout);
    assert!(
        symbols.contains("GOMP_parallel_loop_dynamic") && symbols.contains("GOMP_parallel_start"),
        "gcc no longer emits the forms this test is about: {symbols}"
    );
    both_threads_beat(dir.path(), &program, &["combined"]);
    both_threads_beat(dir.path(), &program, &["old"]);
}

#[test]
fn the_thread_creation_tree_becomes_nested_bubbles_kept_whole_on_nodes() {
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    let Some([first, second]) = first_two_cpus() else {
        return;
    };
    build_library();
    let dir = tempfile::tempdir().unwrap();
    let tree = build_program(dir.path(), "thread_tree", &["-pthread"]);
    let summary = dir.path().join("summary.json");
    let trace = dir.path().join("trace.csv");
    let map = format!("{first},{second}");
    // Two families of two computing leaves on two one-core nodes: each
    // family's bubble (its creator, waiting in join, and its leaves) fits no
    // node, but opening it would not give any thread more CPU.
    let out = pinlearn()
        .args([
            "run",
            "--quiet",
            "--policy",
            "bubbles",
            "--preload",
            "threads,heartbeats",
        ])
        .args(["--topology", "node:2 core:1 pu:1", "--topology-map", &map, "--json"])
        .arg(&summary)
        .arg("--trace")
        .arg(&trace)
        .args(["--", tree.to_str().unwrap(), "2", "3"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 2, "both families finished: {stdout}");
    let threads = threads(&summary);
    let named = |name: &str| {
        threads
            .iter()
            .find(|t| field(t, "name") == name)
            .unwrap_or_else(|| panic!("no thread {name} in {threads:?}"))
    };
    let main = &threads[0];
    let leaves = ["fam-0a", "fam-0b", "fam-1a", "fam-1b"].map(named);
    // A family seen whole while the other's leaves had not started yet is
    // opened over both nodes (it had them to itself), and a respread keeps
    // started threads where they are (docs/bubbles.md): the families are
    // kept whole only where the first period that saw a leaf in its bubble
    // saw all four in theirs.
    let together = seen_together(&trace, &leaves);
    for family in ["fam-0", "fam-1"] {
        let creator = named(family);
        let bubble = field(creator, "bubble");
        assert!(
            bubble.starts_with(&format!("threads of {} ", creator["tid"])),
            "{family} is in the bubble it made: {creator}"
        );
        let (a, b) = (named(&format!("{family}a")), named(&format!("{family}b")));
        for leaf in [a, b] {
            assert_eq!(field(leaf, "bubble"), bubble, "{leaf}");
            assert_eq!(field(leaf, "source"), "heartbeat", "pthread_barrier_wait beats: {leaf}");
        }
        if together {
            assert_eq!(main_cpus(a), main_cpus(b), "a family stays on one node: {a} {b}");
        }
        assert_ne!(field(main, "bubble"), bubble);
    }
    assert!(
        field(main, "bubble").starts_with(&format!("threads of {} ", main["tid"])),
        "{main}"
    );
    let mut cpus = leaves.map(main_cpus);
    if together {
        assert_ne!(cpus[0], cpus[2], "the two families are on different nodes");
    }
    cpus.sort();
    assert!(
        cpus[0] == cpus[1] && cpus[2] == cpus[3] && cpus[1] != cpus[2],
        "two leaves on each node: {cpus:?}"
    );
}

/// Whether the first period of `trace` (a `run --trace` file) that showed
/// one of `leaves` in its bubble showed all of them in theirs.
fn seen_together(trace: &Path, leaves: &[&serde_json::Value]) -> bool {
    let text = std::fs::read_to_string(trace).expect("the run wrote its trace");
    let tids: Vec<String> = leaves.iter().map(|leaf| leaf["tid"].to_string()).collect();
    let mut periods: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
    for row in text.lines().skip(1) {
        let columns: Vec<&str> = row.split(',').collect();
        let (Some(period), Some(tid), Some(bubble)) = (columns.get(1), columns.get(3), columns.get(8)) else {
            continue;
        };
        if tids.iter().any(|t| t == tid) && !bubble.is_empty() {
            *periods.entry(period.parse().expect("a period number")).or_default() += 1;
        }
    }
    let first = periods
        .values()
        .next()
        .copied()
        .expect("the trace shows the leaves in their bubbles");
    first == leaves.len()
}

/// The CPUs a thread spent most of its periods on (from `time_on`): where
/// it was kept while both families ran. Its last place can differ: once one
/// family ends, the other's node is crowded beside a free CPU, and the
/// respread moves a leaf there (docs/bubbles.md).
fn main_cpus(thread: &serde_json::Value) -> String {
    let spells = thread["time_on"]
        .as_array()
        .unwrap_or_else(|| panic!("no time_on: {thread}"));
    let longest = spells
        .iter()
        .max_by(|x, y| {
            x["share"]
                .as_f64()
                .unwrap_or(0.0)
                .total_cmp(&y["share"].as_f64().unwrap_or(0.0))
        })
        .unwrap_or_else(|| panic!("empty time_on: {thread}"));
    assert!(
        longest["share"].as_f64().unwrap_or(0.0) >= 0.75,
        "kept in one place most of the run: {thread}"
    );
    let cpus = field(longest, "cpus");
    assert!(!cpus.is_empty(), "time_on names CPUs: {thread}");
    cpus.to_string()
}

#[test]
fn a_preloaded_program_ends_as_it_would_alone() {
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    build_library();
    let dir = tempfile::tempdir().unwrap();
    // Exit status, a fork, a failing exec and an LD_PRELOAD of the user's
    // own all pass through.
    let out = pinlearn()
        .args(["run", "--quiet", "--preload", "heartbeats", "--"])
        .args([
            "sh",
            "-c",
            "(exit 0) & wait; /nonexistent 2>/dev/null; echo \"$LD_PRELOAD\"; exit 7",
        ])
        .env("LD_PRELOAD", "")
        .env("PINLEARN_HEARTBEAT_DIR", dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    let preload = String::from_utf8_lossy(&out.stdout);
    assert!(preload.trim().ends_with("libpinlearn_preload.so"), "{preload}");
    let killed = pinlearn()
        .args([
            "run",
            "--quiet",
            "--preload",
            "heartbeats",
            "--",
            "sh",
            "-c",
            "kill -9 $$",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(killed.status.code(), Some(137), "{}", stderr(&killed));
}

#[test]
fn bad_preload_requests_are_refused_before_the_program_starts() {
    build_library();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let touch = format!("touch {}", marker.display());
    for (args, env, says) in [
        (vec!["--preload", "beats"], None, "use heartbeats, threads"),
        (vec!["--preload", "heartbeats,heartbeats"], None, "given twice"),
        (vec!["--preload", "threads"], None, "--policy bubbles or bubbles+learn"),
        (
            vec!["--preload", "heartbeats"],
            Some("/nonexistent/libpinlearn_preload.so"),
            "PINLEARN_PRELOAD_LIBRARY=/nonexistent",
        ),
    ] {
        let mut command = pinlearn();
        command.arg("run").args(&args).args(["--", "sh", "-c", &touch]);
        if let Some(path) = env {
            command.env("PINLEARN_PRELOAD_LIBRARY", path);
        }
        let out = command.stdin(Stdio::null()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "one line: {}", stderr(&out));
        assert!(!marker.exists(), "{args:?}: the program ran");
    }
}

#[test]
fn topo_says_whether_the_preload_library_is_there() {
    build_library();
    let json = |missing: bool| -> Value {
        let mut command = pinlearn();
        command.args(["topo", "--json", "-"]);
        if missing {
            command.env("PINLEARN_PRELOAD_LIBRARY", "/nonexistent/libpinlearn_preload.so");
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let found = json(false);
    let library = found["probes"]["preload_library"].as_str().unwrap_or("");
    assert!(library.ends_with("libpinlearn_preload.so"), "{found}");
    assert!(Path::new(library).is_file(), "{library}");
    let missing = json(true);
    assert!(missing["probes"]["preload_library"].is_null(), "{missing}");
    let note = missing["probes"]["preload_note"].as_str().unwrap_or("");
    assert!(note.contains("PINLEARN_PRELOAD_LIBRARY=/nonexistent"), "{missing}");
}
