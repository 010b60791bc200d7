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

#[test]
fn c_example_runs_the_manager_in_process_and_restores_affinity() {
    let lib_dir = library_dir();
    if !lib_dir.join("libpinlearn.so").exists() {
        // `cargo test` builds the cdylib of this package before its tests;
        // make sure of it so the test never depends on an earlier build.
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "pinlearn-capi"])
            .args(if lib_dir.ends_with("release") {
                vec!["--release"]
            } else {
                vec![]
            })
            .status()
            .expect("cargo build");
        assert!(status.success());
    }
    let out = tempfile::tempdir().expect("tempdir");
    let exe = out.path().join("in_process");
    let rpath = format!("-Wl,-rpath,{}", lib_dir.display());
    let cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .arg(crate_dir().join("examples/in_process.c"))
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

    let dir = tempfile::tempdir().expect("heartbeat dir");
    // The static policy pins every worker in the first period, so the
    // example's check (exit 3 if a mask was not put back) tests a restore.
    let run = Command::new(&exe)
        .args(["3", "1.0", "static"])
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
    assert!(summary["periods"].as_u64().unwrap() >= 20, "1 s at 20 ms: {summary}");
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
