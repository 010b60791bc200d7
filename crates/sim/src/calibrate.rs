//! Calibration: does the model agree with a real machine? The cells a real
//! `pinlearn bench` measured are simulated on the same topology, with the
//! same threads, load and session, and their ratios put side by side.
//!
//! ```text
//!   bench JSON (setup: cores, load session; workloads: name + command; runs)
//!      │ RealBench::parse: median completion per (workload, scenario, scheduler)
//!      ▼
//!   per workload: WorkloadSpec from its command (aco ─► barrier, aco --sync
//!      │          spin* ─► barrier-spin with its --spin, pipeline ─► pipeline
//!      │          with its --stages, the rest ─► independent), sized per
//!      │          level to the real os time of that level without load (X.1)
//!      ▼
//!   Experiment on "node:1 core:N pu:1" ─► os, static, learn × seeds ─► medians
//!      ▼
//!   Calibration: per cell real and modelled static/os and learn/os, the
//!                difference in points, the winner of each side, and how
//!                many cells agree (within `AGREEMENT_POINTS`, same winner)
//! ```
//!
//! The real runs' `learn` is the learner of the day the bench ran (its
//! JSON names the command, not the commit), the modelled one today's: the
//! learn columns compare only when both are of one version.

use std::collections::BTreeMap;

use pinlearn_engine::{PolicyChoice, Settings};
use pinlearn_experiment::{Load, LoadSession, Scenario, Scheduler};
use pinlearn_report::{Table, stats};
use pinlearn_topology::Topology;
use serde::Serialize;
use serde_json::Value;

use crate::SimError;
use crate::experiment::Experiment;
use crate::machine::{MachineParams, SimMetric};
use crate::workload::{WorkloadKind, WorkloadSpec};

/// A modelled ratio within this many points of the real one agrees.
pub const AGREEMENT_POINTS: f64 = 10.0;

/// How long a spin-then-block waiter of `pinlearn work aco` spins when its
/// command does not say (the workload's default).
const ACO_DEFAULT_SPIN_S: f64 = 200e-6;

/// The schedulers compared (best-static is left out: its real search and
/// the model's optimum answer different questions).
const SCHEDULERS: [&str; 3] = ["os", "static", "learn"];

/// What a real bench measured, reduced to what calibration needs.
#[derive(Clone, Debug, PartialEq)]
pub struct RealBench {
    pub cores: usize,
    /// Cores per NUMA node, when the bench recorded them.
    pub cores_per_node: Vec<usize>,
    pub load_session: LoadSession,
    pub date: Option<String>,
    pub command: Option<String>,
    /// (name, the `pinlearn work` command it ran).
    pub workloads: Vec<(String, String)>,
    /// Median completion (s) and threads per (workload, scenario, scheduler).
    pub cells: BTreeMap<(String, String, String), (f64, usize)>,
}

fn bad(message: impl Into<String>) -> SimError {
    SimError::BadInput(message.into())
}

impl RealBench {
    /// Reads the JSON `pinlearn bench --json` writes (runs with
    /// `completion_s`, or `wall_s` as files of 2026-11-22 have it).
    pub fn parse(text: &str) -> Result<Self, SimError> {
        let doc: Value = serde_json::from_str(text).map_err(|e| bad(format!("not a bench JSON file: {e}")))?;
        let setup = doc
            .get("setup")
            .ok_or_else(|| bad("not a bench JSON file: it has no \"setup\""))?;
        let cores = setup
            .get("cores")
            .and_then(Value::as_u64)
            .filter(|&c| (1..=16_384).contains(&c))
            .ok_or_else(|| bad("the bench JSON's setup has no core count (\"cores\", 1 to 16384)"))?
            as usize;
        let cores_per_node: Vec<usize> = setup
            .get("cores_per_node")
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(Value::as_u64).map(|c| c as usize).collect())
            .unwrap_or_default();
        let load_session = match setup.get("load_session").and_then(Value::as_str) {
            None | Some("own") => LoadSession::Own,
            Some("same") => LoadSession::Same,
            Some(other) => {
                return Err(bad(format!(
                    "the bench JSON's load session {other:?} is neither own nor same"
                )));
            }
        };
        let text_of = |key: &str| setup.get(key).and_then(Value::as_str).map(str::to_string);
        let workloads = setup
            .get("workloads")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|pair| {
                        let pair = pair.as_array()?;
                        Some((pair.first()?.as_str()?.to_string(), pair.get(1)?.as_str()?.to_string()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let runs = doc
            .get("runs")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("not a bench JSON file: it has no \"runs\""))?;
        let mut times: BTreeMap<(String, String, String), (Vec<f64>, usize)> = BTreeMap::new();
        for run in runs {
            let field = |key: &str| run.get(key).and_then(Value::as_str).map(str::to_string);
            let (Some(workload), Some(scenario), Some(scheduler)) =
                (field("workload"), field("scenario"), field("scheduler"))
            else {
                return Err(bad("a run of the bench JSON lacks its workload, scenario or scheduler"));
            };
            let seconds = run
                .get("completion_s")
                .or_else(|| run.get("wall_s"))
                .and_then(Value::as_f64)
                .filter(|s| s.is_finite() && *s > 0.0);
            let threads = run.get("threads").and_then(Value::as_u64).unwrap_or(0) as usize;
            if let Some(seconds) = seconds {
                let entry = times.entry((workload, scenario, scheduler)).or_default();
                entry.0.push(seconds);
                entry.1 = threads;
            }
        }
        let cells = times
            .into_iter()
            .filter_map(|(key, (values, threads))| Some((key, (stats(&values)?.median, threads))))
            .collect();
        Ok(RealBench {
            cores,
            cores_per_node,
            load_session,
            date: text_of("date"),
            command: text_of("command"),
            workloads,
            cells,
        })
    }

    /// The synthetic topology of the bench's CPUs: one node of `cores`
    /// cores, or the recorded nodes when they are all the same size.
    pub fn topology(&self) -> String {
        match self.cores_per_node.as_slice() {
            [first, rest @ ..] if self.cores_per_node.len() > 1 && rest.iter().all(|c| c == first) => {
                format!("node:{} core:{first} pu:1", self.cores_per_node.len())
            }
            _ => format!("node:1 core:{} pu:1", self.cores),
        }
    }
}

/// The simulated program that stands for a real workload, or why none does.
pub fn sim_workload(name: &str, command: &str) -> Result<WorkloadSpec, String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let value_of = |flag: &str| words.windows(2).find(|w| w[0] == flag).map(|w| w[1]);
    let workload = words
        .iter()
        .position(|w| *w == "work")
        .and_then(|i| {
            words[i + 1..]
                .iter()
                .find(|w| !w.starts_with('-') && w.parse::<f64>().is_err())
        })
        .copied()
        .unwrap_or(name);
    let mut spec = WorkloadSpec {
        memory_intensity: 0.0,
        ..WorkloadSpec::default()
    };
    match workload {
        "aco" => match value_of("--sync") {
            None | Some("block") => spec.kind = WorkloadKind::Barrier,
            Some("spin") => {
                spec.kind = WorkloadKind::BarrierSpin;
                spec.spin_s = None;
            }
            Some("spin-then-block") => {
                spec.kind = WorkloadKind::BarrierSpin;
                spec.spin_s = Some(match value_of("--spin") {
                    Some(text) => pinlearn_engine::parse_duration(text)
                        .map_err(|e| format!("{name}: {e}"))?
                        .as_secs_f64(),
                    None => ACO_DEFAULT_SPIN_S,
                });
            }
            Some(other) => return Err(format!("{name}: unknown --sync {other}")),
        },
        "pipeline" => {
            spec.kind = WorkloadKind::Pipeline;
            if let Some(stages) = value_of("--stages") {
                spec.stages = stages
                    .split(',')
                    .map(|s| s.parse::<f64>().ok().filter(|v| v.is_finite() && *v > 0.0))
                    .collect::<Option<Vec<f64>>>()
                    .ok_or_else(|| format!("{name}: --stages {stages} is not a list of positive numbers"))?;
            }
        }
        "blackscholes" | "swaptions" | "stream" | "binpack" => spec.kind = WorkloadKind::Independent,
        other => return Err(format!("{name}: no simulated program stands for `{other}`")),
    }
    Ok(spec)
}

/// One cell side by side.
#[derive(Clone, Debug, Serialize)]
pub struct CalibrationCell {
    pub workload: String,
    pub scenario: String,
    pub threads: usize,
    pub real_os_s: f64,
    pub sim_os_s: Option<f64>,
    /// scheduler ─► (real ratio to os, modelled ratio to os).
    pub ratios: BTreeMap<String, (Option<f64>, Option<f64>)>,
    pub real_winner: String,
    pub sim_winner: Option<String>,
}

impl CalibrationCell {
    /// Every ratio within `AGREEMENT_POINTS` and the same winner.
    pub fn agrees(&self) -> bool {
        self.sim_winner.as_deref() == Some(self.real_winner.as_str())
            && self.ratios.values().all(|pair| match pair {
                (Some(real), Some(sim)) => ((sim - real) * 100.0).abs() <= AGREEMENT_POINTS,
                (None, _) => true,
                (Some(_), None) => false,
            })
    }
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    pub topology: String,
    pub load_session: LoadSession,
    pub real_date: Option<String>,
    pub real_command: Option<String>,
    pub seeds: usize,
    pub cells: Vec<CalibrationCell>,
    /// Workloads left out, with the reason.
    pub skipped: Vec<String>,
}

/// A scheduler within this share of os's time ties with it.
pub const TIE_SHARE: f64 = 0.02;

/// The fastest scheduler, or `os` when none is faster than os by more than
/// `TIE_SHARE` (a placement that gains less than that did not win).
fn winner(times: &BTreeMap<&str, f64>) -> Option<String> {
    let (name, best) = times.iter().min_by(|a, b| a.1.total_cmp(b.1))?;
    match times.get("os") {
        Some(os) if *best >= os * (1.0 - TIE_SHARE) => Some("os".to_string()),
        _ => Some((*name).to_string()),
    }
}

/// Simulates every cell of `real` (schedulers os, static and learn, `seeds`
/// seeds from `settings.seed`) and compares; the model's load session is the
/// bench's unless `session` says otherwise (to see what the session model
/// changes).
pub fn calibrate(
    real: &RealBench,
    settings: &Settings,
    params: &MachineParams,
    seeds: u64,
    session: Option<LoadSession>,
) -> Result<Calibration, SimError> {
    if seeds == 0 {
        return Err(bad("--seeds must be at least 1"));
    }
    let spec = real.topology();
    let topology = Topology::from_spec(&spec)?;
    let mut params = params.clone();
    params.load_session = session.unwrap_or(real.load_session);
    params.metric = SimMetric::from(settings.metric);
    // `pinlearn load` runs one spinner per loaded CPU: one nice-0 thread per
    // core in the workload's session, one group of nice-0 weight in its own.
    let background_weight = 1.0;
    let schedulers = [PolicyChoice::Os, PolicyChoice::Static, PolicyChoice::Learn].map(Scheduler::policy);
    let mut cells = Vec::new();
    let mut skipped = Vec::new();
    for (name, command) in &real.workloads {
        let base = match sim_workload(name, command) {
            Ok(spec) => spec,
            Err(reason) => {
                skipped.push(reason);
                continue;
            }
        };
        let scenarios: Vec<String> = {
            let mut list: Vec<String> = real
                .cells
                .keys()
                .filter(|(w, _, s)| w == name && s == "os")
                .map(|(_, scenario, _)| scenario.clone())
                .collect();
            list.sort_by_key(|s| s.parse::<Scenario>().ok());
            list
        };
        for scenario_name in scenarios {
            let Ok(scenario) = scenario_name.parse::<Scenario>() else {
                skipped.push(format!("{name} {scenario_name}: not a scenario of this version"));
                continue;
            };
            let (real_os, threads) = real.cells[&(name.clone(), scenario_name.clone(), "os".to_string())];
            // The program's length without load at this level sizes the work.
            let unloaded = Scenario {
                load: Load::None,
                ..scenario
            }
            .to_string();
            let Some(&(duration, _)) = real.cells.get(&(name.clone(), unloaded.clone(), "os".to_string())) else {
                skipped.push(format!(
                    "{name} {scenario_name}: no os run of {unloaded} to size the work"
                ));
                continue;
            };
            let experiment = Experiment {
                topology: topology.clone(),
                workload: WorkloadSpec {
                    threads: threads.max(1),
                    duration_s: duration,
                    ..base.clone()
                },
                params: params.clone(),
                settings: settings.clone(),
                background_weight,
            };
            let prepared = experiment.prepare(scenario)?;
            let mut sim_times: BTreeMap<&str, f64> = BTreeMap::new();
            for (scheduler, label) in schedulers.iter().zip(SCHEDULERS) {
                let mut values = Vec::new();
                for k in 0..seeds {
                    let result = experiment.run(&prepared, *scheduler, k as usize, settings.seed.wrapping_add(k))?;
                    if let Some(t) = result.record.completion_s {
                        values.push(t);
                    }
                }
                if let Some(summary) = stats(&values).filter(|s| s.n as u64 == seeds) {
                    sim_times.insert(label, summary.median);
                }
            }
            let mut real_times: BTreeMap<&str, f64> = BTreeMap::new();
            for label in SCHEDULERS {
                if let Some(&(t, _)) = real
                    .cells
                    .get(&(name.clone(), scenario_name.clone(), label.to_string()))
                {
                    real_times.insert(label, t);
                }
            }
            let sim_os = sim_times.get("os").copied();
            let ratios = SCHEDULERS[1..]
                .iter()
                .map(|label| {
                    let real_ratio = real_times.get(label).map(|t| t / real_os);
                    let sim_ratio = sim_os.and_then(|os| sim_times.get(label).map(|t| t / os));
                    (label.to_string(), (real_ratio, sim_ratio))
                })
                .collect();
            // Winners among the schedulers both sides ran.
            sim_times.retain(|label, _| real_times.contains_key(label));
            cells.push(CalibrationCell {
                workload: name.clone(),
                scenario: scenario_name,
                threads,
                real_os_s: real_os,
                sim_os_s: sim_os,
                ratios,
                real_winner: winner(&real_times).unwrap_or_else(|| "os".into()),
                sim_winner: winner(&sim_times),
            });
        }
    }
    if cells.is_empty() {
        return Err(bad(format!(
            "nothing to calibrate: no workload of the bench JSON has a simulated counterpart ({})",
            skipped.join("; ")
        )));
    }
    Ok(Calibration {
        topology: spec,
        load_session: params.load_session,
        real_date: real.date.clone(),
        real_command: real.command.clone(),
        seeds: seeds as usize,
        cells,
        skipped,
    })
}

impl Calibration {
    /// The side-by-side table and the agreement count.
    pub fn table(&self) -> String {
        let percent = |r: Option<f64>| r.map_or("—".to_string(), |r| format!("{:+.0}%", (r - 1.0) * 100.0));
        let mut table = Table {
            headers: [
                "workload",
                "scenario",
                "real static",
                "sim static",
                "real learn",
                "sim learn",
                "winner real",
                "winner sim",
                "agrees",
            ]
            .map(String::from)
            .to_vec(),
            rows: Vec::new(),
        };
        for cell in &self.cells {
            let pair = |label: &str| cell.ratios.get(label).copied().unwrap_or((None, None));
            let (real_static, sim_static) = pair("static");
            let (real_learn, sim_learn) = pair("learn");
            table.rows.push(vec![
                cell.workload.clone(),
                cell.scenario.clone(),
                percent(real_static),
                percent(sim_static),
                percent(real_learn),
                percent(sim_learn),
                cell.real_winner.clone(),
                cell.sim_winner.clone().unwrap_or_else(|| "—".into()),
                if cell.agrees() { "yes" } else { "no" }.to_string(),
            ]);
        }
        let agree = self.cells.iter().filter(|c| c.agrees()).count();
        let winners = self
            .cells
            .iter()
            .filter(|c| c.sim_winner.as_deref() == Some(c.real_winner.as_str()))
            .count();
        let mut text = table.to_text();
        text += &format!(
            "{agree} of {} cells agree (every ratio to os within {AGREEMENT_POINTS} points and the same winner; \
             within {:.0}% of os is a tie, won by os); the same winner in {winners}; model: {}, load session {}, \
             {} seed(s); real: {}\n",
            self.cells.len(),
            TIE_SHARE * 100.0,
            self.topology,
            self.load_session,
            self.seeds,
            self.real_date.as_deref().unwrap_or("undated")
        );
        for reason in &self.skipped {
            text += &format!("left out: {reason}\n");
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BENCH: &str = r#"{
      "setup": {"date": "2026-11-22T12:46:09Z", "cores": 2, "load_session": "own",
                "workloads": [["aco", "pinlearn work aco --iterations 3000"],
                              ["aco-spin", "pinlearn work aco --iterations 2400 --sync spin-then-block"],
                              ["stream", "pinlearn work stream --size 0.5 --runs 600"],
                              ["fib", "pinlearn work fib"]]},
      "runs": [
        {"workload": "aco", "scenario": "B.1", "scheduler": "os", "threads": 4, "wall_s": 1.0},
        {"workload": "aco", "scenario": "B.1", "scheduler": "os", "threads": 4, "wall_s": 3.0},
        {"workload": "aco", "scenario": "B.1", "scheduler": "os", "threads": 4, "wall_s": 1.2},
        {"workload": "aco", "scenario": "B.2", "scheduler": "static", "threads": 4, "completion_s": 1.5},
        {"workload": "aco", "scenario": "B.2", "scheduler": "os", "threads": 4, "completion_s": null}
      ]}"#;

    #[test]
    fn a_bench_file_gives_medians_per_cell_and_its_machine() {
        let real = RealBench::parse(BENCH).expect("parses");
        assert_eq!(real.cores, 2);
        assert_eq!(real.topology(), "node:1 core:2 pu:1");
        assert_eq!(real.load_session, LoadSession::Own);
        let key = |s: &str, k: &str| ("aco".to_string(), s.to_string(), k.to_string());
        assert_eq!(real.cells[&key("B.1", "os")], (1.2, 4));
        assert_eq!(real.cells[&key("B.2", "static")], (1.5, 4));
        assert!(
            !real.cells.contains_key(&key("B.2", "os")),
            "an unfinished run has no time"
        );
    }

    #[test]
    fn bad_bench_files_say_what_is_missing() {
        for (text, says) in [
            ("[1, 2]", "no \"setup\""),
            ("{\"setup\": {}}", "core count"),
            ("{\"setup\": {\"cores\": 2}}", "no \"runs\""),
            (
                "{\"setup\": {\"cores\": 2, \"load_session\": \"x\"}, \"runs\": []}",
                "neither own nor same",
            ),
            ("not json", "not a bench JSON file"),
        ] {
            let error = RealBench::parse(text).expect_err(text).to_string();
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn workloads_map_to_the_simulated_programs_that_wait_the_same_way() {
        let aco = sim_workload("aco", "pinlearn work aco --iterations 3000").expect("maps");
        assert_eq!(aco.kind, WorkloadKind::Barrier);
        let spin = sim_workload("aco-spin", "pinlearn work aco --sync spin-then-block --spin 1ms").expect("maps");
        assert_eq!((spin.kind, spin.spin_s), (WorkloadKind::BarrierSpin, Some(0.001)));
        let default_spin = sim_workload("aco-spin", "pinlearn work aco --sync spin-then-block").expect("maps");
        assert_eq!(default_spin.spin_s, Some(ACO_DEFAULT_SPIN_S));
        let pipeline = sim_workload("pipeline", "pinlearn work pipeline --stages 3,1,1").expect("maps");
        assert_eq!(
            (pipeline.kind, pipeline.stages),
            (WorkloadKind::Pipeline, vec![3.0, 1.0, 1.0])
        );
        let stream = sim_workload("stream", "pinlearn work stream --size 0.5").expect("maps");
        assert_eq!(stream.kind, WorkloadKind::Independent);
        assert!(sim_workload("fib", "pinlearn work fib").is_err());
        assert!(sim_workload("pipeline", "pinlearn work pipeline --stages 3,x").is_err());
    }

    #[test]
    fn calibration_compares_the_cells_it_can_size_and_says_what_it_left_out() {
        let real = RealBench::parse(BENCH).expect("parses");
        let calibration =
            calibrate(&real, &Settings::default(), &MachineParams::default(), 1, None).expect("calibrates");
        // aco B.1 only: B.2 has no os time; stream and aco-spin have no runs; fib has no model.
        assert_eq!(calibration.cells.len(), 1);
        let cell = &calibration.cells[0];
        assert_eq!((cell.workload.as_str(), cell.scenario.as_str()), ("aco", "B.1"));
        let os = cell.sim_os_s.expect("os finished");
        assert!((os - 1.2).abs() < 0.05, "sized to the real os time without load: {os}");
        assert!(calibration.skipped.iter().any(|s| s.contains("fib")));
        let table = calibration.table();
        assert!(table.contains("of 1 cells agree"), "{table}");
    }
}
