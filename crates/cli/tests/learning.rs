//! Learning on the real machine: with another session's CPU hog on one CPU,
//! a multi-threaded program supervised by `pinlearn run` ends with fewer of
//! its threads on the loaded CPU than on the free one (read from the trace).

mod common;

use common::*;
use std::process::Stdio;

#[test]
fn threads_leave_the_cpu_a_hog_occupies() {
    let allowed = pinlearn_topology::CpuSet::parse_list(&allowed_cpus()).expect("own mask");
    if allowed.len() < 2 {
        eprintln!("skipped: needs 2 CPUs, this test may use {allowed}");
        return;
    }
    let mut cpus = allowed.iter();
    let (loaded, free) = (cpus.next().unwrap(), cpus.next().unwrap());
    let _hog = Guard(
        pinlearn()
            .args(["load", "--setsid", "--cpus", &loaded.to_string()])
            .stdout(Stdio::null())
            .spawn()
            .expect("start the hog"),
    );
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.csv");
    let pair = format!("{loaded},{free}");
    let exe = env!("CARGO_BIN_EXE_pinlearn");
    let out = run(&[
        "run",
        "--quiet",
        "--objective",
        "own",
        "--seed",
        "7",
        "--cpus",
        &pair,
        "--trace",
        trace.to_str().unwrap(),
        "--",
        exe,
        "work",
        "blackscholes",
        "--threads",
        "3",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let mut reader = csv::Reader::from_path(&trace).expect("trace");
    let header = reader.headers().unwrap().clone();
    for column in ["time_s", "tid", "place", "utility"] {
        assert!(header.iter().any(|h| h == column), "trace lacks {column}: {header:?}");
    }
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (time, name, place) = (col("time_s"), col("name"), col("place"));
    let end: f64 = rows.iter().map(|r| r[time].parse::<f64>().unwrap()).fold(0.0, f64::max);
    assert!(end > 2.0, "the workload ran {end} s, too short to learn");
    let late = rows
        .iter()
        .filter(|r| r[name].starts_with("blackscholes-") && r[time].parse::<f64>().unwrap() > end / 2.0);
    let (mut on_loaded, mut on_free) = (0, 0);
    for row in late {
        if row[place] == *loaded.to_string() {
            on_loaded += 1;
        } else if row[place] == *free.to_string() {
            on_free += 1;
        }
    }
    assert!(
        on_loaded < on_free,
        "in the second half, worker thread-periods on the loaded CPU {loaded}: {on_loaded}, on the free CPU {free}: {on_free}"
    );
}
