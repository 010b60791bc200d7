//! The C ABI end to end: the committed header matches the code, and the
//! example C program builds against it, runs the in-process manager on its
//! own threads, and gets every thread's affinity back.

use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn committed_header_is_what_cbindgen_generates() {
    let config = cbindgen::Config::from_file(crate_dir().join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir())
        .with_config(config)
        .generate()
        .expect("cbindgen runs")
        .write(&mut generated);
    let header_path = crate_dir().join("include/pinlearn.h");
    if std::env::var_os("PINLEARN_BLESS").is_some() {
        std::fs::write(&header_path, &generated).expect("write header");
    }
    let committed = std::fs::read(&header_path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/pinlearn.h is out of date: run PINLEARN_BLESS=1 cargo test -p pinlearn-capi and commit it"
    );
}

/// The directory holding libpinlearn.so of this build profile.
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    // target/<profile>/deps/c_abi-HASH
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>")
        .to_path_buf()
}

/// Builds `package` in this test's build profile.
fn cargo_build(package: &str) {
    let status = Command::new(env!("CARGO"))
        .args(["build", "-p", package])
        .args(if library_dir().ends_with("release") {
            vec!["--release"]
        } else {
            vec![]
        })
        .status()
        .expect("cargo build");
    assert!(status.success(), "cargo build -p {package} failed");
}

/// Builds `examples/NAME.c` against the header and this profile's
/// libpinlearn.so; the executable lives in the returned directory.
fn build_example(name: &str) -> (tempfile::TempDir, PathBuf) {
    let lib_dir = library_dir();
    if !lib_dir.join("libpinlearn.so").exists() {
        // `cargo test` builds the cdylib of this package before its tests;
        // make sure of it so the test never depends on an earlier build.
        cargo_build("pinlearn-capi");
    }
    let out = tempfile::tempdir().expect("tempdir");
    let exe = out.path().join(name);
    let rpath = format!("-Wl,-rpath,{}", lib_dir.display());
    let cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .arg(crate_dir().join(format!("examples/{name}.c")))
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg("-L")
        .arg(&lib_dir)
        .args(["-lpinlearn", &rpath, "-lpthread", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .output()
        .expect("a C compiler (cc) is installed");
    assert!(
        cc.status.success(),
        "cc failed: {}",
        String::from_utf8_lossy(&cc.stderr)
    );
    (out, exe)
}

#[test]
fn c_example_runs_the_manager_in_process_and_restores_affinity() {
    let (_out, exe) = build_example("in_process");
    let dir = tempfile::tempdir().expect("heartbeat dir");
    // The static policy pins every worker in the first period, so the
    // example's check (exit 3 if a mask was not put back) tests a restore.
    let run = Command::new(&exe)
        .args(["3", "2.0", "static"])
        .env("PINLEARN_HEARTBEAT_DIR", dir.path())
        .output()
        .expect("run the example");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "example failed: {stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&run.stdout).expect("summary JSON on stdout");
    assert_eq!(
        summary["threads_seen"], 3,
        "only the 3 registered workers are supervised: {summary}"
    );
    // 100 periods asked for: 20 show the manager ran in periods even where a
    // loaded machine (the tests run side by side) delays or stretches some.
    assert!(summary["periods"].as_u64().unwrap() >= 20, "2 s at 20 ms: {summary}");
    assert_eq!(summary["ended_by"], "stopped");
    assert!(
        summary["repins"].as_u64().unwrap() >= 2,
        "the workers were pinned (so their restore is tested): {summary}"
    );
    assert!(summary["manager_cpu_s"].as_f64().unwrap() >= 0.0);
}

#[test]
fn c_example_rejects_a_bad_configuration_with_a_message() {
    // Through the Rust side of the same ABI: a malformed configuration.
    let text = std::ffi::CString::new("interval = \"soon\"").unwrap();
    // SAFETY: valid C string; NULL result expected.
    let manager = unsafe { pinlearn::pinlearn_start(text.as_ptr(), pinlearn::PINLEARN_ALL_THREADS) };
    assert!(manager.is_null());
    // SAFETY: pinlearn_last_error returns a valid C string.
    let message = unsafe { std::ffi::CStr::from_ptr(pinlearn::pinlearn_last_error()) }
        .to_string_lossy()
        .into_owned();
    assert!(message.contains("invalid duration"), "{message}");
    // SAFETY: as above, with an unknown mode.
    let manager = unsafe { pinlearn::pinlearn_start(std::ptr::null(), 7) };
    assert!(manager.is_null());
    let message = unsafe { std::ffi::CStr::from_ptr(pinlearn::pinlearn_last_error()) }
        .to_string_lossy()
        .into_owned();
    assert!(message.contains("unknown mode 7"), "{message}");
}

#[test]
fn c_bubbles_are_placed_one_per_node_right_after_the_wake_up() {
    let (_out, exe) = build_example("bubbles");
    // Two nodes made of the first two CPUs this test may use, so the
    // placement is checked on any machine with two CPUs.
    let map = first_two_cpus();
    for threads in ["1", "2"] {
        let run = Command::new(&exe)
            .args([threads, "node:2 core:1 pu:1", &map])
            .output()
            .expect("run the example");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(0), "{threads} per bubble: {stderr}");
        let summary: serde_json::Value = serde_json::from_slice(&run.stdout).expect("summary JSON on stdout");
        assert_eq!(summary["policy"], "bubbles", "{summary}");
        let workers = 2 * threads.parse::<u64>().unwrap();
        assert_eq!(summary["threads_seen"], workers, "{summary}");
        let bubbles: std::collections::BTreeSet<String> = summary["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["bubble"].as_str().unwrap_or("").to_string())
            .collect();
        assert_eq!(
            bubbles,
            ["node 0", "node 1"].map(String::from).into(),
            "the summary names each worker's bubble: {summary}"
        );
    }
}

#[test]
fn bubbles_declared_over_the_channel_reach_a_pinlearn_run_outside_the_program() {
    let (_out, exe) = build_example("bubbles");
    let pinlearn = library_dir().join("pinlearn");
    if !pinlearn.exists() {
        cargo_build("pinlearn");
    }
    let map = first_two_cpus();
    let dir = tempfile::tempdir().expect("channel dir");
    let out = tempfile::tempdir().expect("summary dir");
    let summary_path = out.path().join("summary.json");
    let run = Command::new(&pinlearn)
        .args([
            "run",
            "--policy",
            "bubbles",
            "--interval",
            "50ms",
            "--metric",
            "cpu",
            "--json",
        ])
        .arg(&summary_path)
        .args(["--topology", "node:2 core:1 pu:1", "--topology-map", &map, "--"])
        .arg(&exe)
        .args(["2", "outside"])
        .env("PINLEARN_HEARTBEAT_DIR", dir.path())
        .output()
        .expect("run pinlearn");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    // The outside handle's own summary is empty: pinlearn has the run's.
    assert_eq!(String::from_utf8_lossy(&run.stdout).trim(), "{}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary_path).unwrap()).expect("pinlearn's summary");
    let bubbles: std::collections::BTreeSet<String> = summary["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["bubble"].as_str().map(str::to_string))
        .collect();
    assert_eq!(bubbles, ["node 0", "node 1"].map(String::from).into(), "{summary}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "the channel is removed when the program closes it"
    );
}

/// The first two CPUs this test may use, as a CPU list.
fn first_two_cpus() -> String {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list")
        .trim()
        .to_string();
    let mut allowed: Vec<usize> = Vec::new();
    for part in list.split(',') {
        let (low, high) = part.split_once('-').unwrap_or((part, part));
        allowed.extend(low.parse::<usize>().unwrap()..=high.parse::<usize>().unwrap());
    }
    assert!(allowed.len() >= 2, "the test needs two CPUs, has {list}");
    format!("{},{}", allowed[0], allowed[1])
}

/// The last error of this thread.
fn last_error() -> String {
    // SAFETY: pinlearn_last_error returns a valid C string.
    unsafe { std::ffi::CStr::from_ptr(pinlearn::pinlearn_last_error()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn bad_bubble_calls_fail_with_one_line_and_change_nothing() {
    let c = |s: &str| std::ffi::CString::new(s).unwrap();
    // A manager whose policy places no bubbles refuses them.
    let learn = c("policy = \"learn\"\ninterval = \"50ms\"\nmetric = \"cpu\"");
    // SAFETY: valid C strings and live managers throughout.
    unsafe {
        let m = pinlearn::pinlearn_start(learn.as_ptr(), pinlearn::PINLEARN_REGISTERED_THREADS);
        assert!(!m.is_null(), "{}", last_error());
        assert_eq!(
            pinlearn::pinlearn_bubble_create(m, pinlearn::PINLEARN_ROOT, std::ptr::null()),
            -1
        );
        assert!(last_error().contains("policy is learn"), "{}", last_error());
        pinlearn::pinlearn_free_string(pinlearn::pinlearn_stop(m));

        let config = c("policy = \"bubbles\"\ninterval = \"50ms\"\nmetric = \"cpu\"");
        let m = pinlearn::pinlearn_start(config.as_ptr(), pinlearn::PINLEARN_REGISTERED_THREADS);
        assert!(!m.is_null(), "{}", last_error());
        let a = pinlearn::pinlearn_bubble_create(m, pinlearn::PINLEARN_ROOT, c("a").as_ptr());
        assert_eq!(a, 0, "{}", last_error());
        let b = pinlearn::pinlearn_bubble_create(m, a, c("b").as_ptr());
        assert_eq!(b, 1, "{}", last_error());
        let refused = |status: i32, expected: &str| {
            let message = last_error();
            assert_eq!(status, -1, "{expected}");
            assert!(message.contains(expected), "{expected}: {message}");
            assert!(!message.contains('\n'), "{message}");
        };
        refused(
            pinlearn::pinlearn_bubble_create(m, 5, std::ptr::null()),
            "bubble 5 does not exist",
        );
        refused(
            pinlearn::pinlearn_bubble_create(m, -2, std::ptr::null()),
            "numbered from 0",
        );
        refused(
            pinlearn::pinlearn_bubble_create(m, pinlearn::PINLEARN_ROOT, c("a").as_ptr()),
            "declared twice",
        );
        refused(
            pinlearn::pinlearn_bubble_insert_bubble(m, b, a),
            "cannot hold itself or its own ancestors",
        );
        refused(
            pinlearn::pinlearn_bubble_set_burst(m, a, c("socket").as_ptr()),
            "unknown level \"socket\"",
        );
        refused(
            pinlearn::pinlearn_bubble_set_load(m, a, f64::NAN),
            "not a number of at least 0",
        );
        refused(
            pinlearn::pinlearn_thread_set_load(m, 0, -3.0),
            "not a number of at least 0",
        );
        refused(pinlearn::pinlearn_thread_set_load(m, -4, 0.0), "thread id -4");
        assert_eq!(pinlearn::pinlearn_thread_set_load(m, 0, 0.0), 0, "{}", last_error());
        assert_eq!(
            pinlearn::pinlearn_thread_set_load(m, 0, pinlearn::PINLEARN_LOAD_MEASURED),
            0,
            "{}",
            last_error()
        );
        refused(pinlearn::pinlearn_bubble_remove_thread(m, 0), "is in no bubble");
        refused(pinlearn::pinlearn_bubble_insert_thread(m, a, -4), "thread id -4");
        refused(
            pinlearn::pinlearn_places(m, c("rack").as_ptr()),
            "unknown level \"rack\"",
        );
        refused(
            pinlearn::pinlearn_place_cpus(m, c("machine").as_ptr(), 3, std::ptr::null_mut(), 0),
            "3 is not one of them",
        );
        refused(
            pinlearn::pinlearn_bubble_wake_up(std::ptr::null(), a),
            "manager is NULL",
        );
        assert_eq!(pinlearn::pinlearn_bubble_insert_thread(m, a, 0), 0, "{}", last_error());
        assert_eq!(pinlearn::pinlearn_bubble_insert_thread(m, b, 0), -1);
        assert!(last_error().contains("is in bubble \"a\" already"), "{}", last_error());
        assert_eq!(pinlearn::pinlearn_places(m, c("machine").as_ptr()), 1);
        assert_eq!(pinlearn::pinlearn_bubble_wake_up(m, a), 0, "{}", last_error());
        let summary = pinlearn::pinlearn_stop(m);
        assert!(!summary.is_null(), "{}", last_error());
        let text = std::ffi::CStr::from_ptr(summary).to_string_lossy().into_owned();
        pinlearn::pinlearn_free_string(summary);
        let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(summary["threads"][0]["bubble"], "a", "{summary}");
    }
    let bad_topology = c("node:2 core:1 pu:1");
    // SAFETY: valid C strings.
    let m = unsafe { pinlearn::pinlearn_start_on(std::ptr::null(), 0, bad_topology.as_ptr(), std::ptr::null()) };
    assert!(m.is_null());
    assert!(last_error().contains("give the topology map"), "{}", last_error());
}
