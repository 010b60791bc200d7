//! The workloads a bench runs: named presets of `pinlearn work` arguments,
//! chosen so that one run lasts about 1.2 seconds on two idle cores without load
//! and does the same total work at every thread count.
//!
//! ```text
//!   --workload aco [--workload-args "--iterations 300 --sync spin"]
//!        ─► BenchWorkload { name "aco", args ["aco", "--iterations", "300", "--sync", "spin"] }
//!        ─► pinlearn work aco --iterations 300 --sync spin --threads N --json --quiet
//!   --workload aco --scale 4
//!        ─► the preset with its amount of work (`Preset::work`) times 4:
//!           pinlearn work aco --iterations 12000 ...
//!   --workload fib --scale 4
//!        ─► fib's work grows as φ^n (`Growth::Power`): n + 3, about 4.2 times the work
//!           pinlearn work fib --n 47 ...
//! ```

use crate::BenchError;

/// A preset: the bench name, the `pinlearn work` subcommand, its arguments,
/// and why they were chosen.
pub struct Preset {
    pub name: &'static str,
    pub workload: &'static str,
    pub args: &'static [&'static str],
    /// The argument among `args` whose value is the amount of work
    /// (`--scale` multiplies it).
    pub work: &'static str,
    /// How the work grows with that argument's value.
    pub growth: Growth,
    pub why: &'static str,
    /// Median seconds of one run alone on 2 cores (C.1 under Linux,
    /// docs/results/bench-quick.md), for `--dry-run`'s estimate.
    pub expected_s: f64,
    /// Its threads do little but stream memory: the bench measures the
    /// memory bandwidth with it (`Setup::memory_bandwidth`).
    pub memory_bound: bool,
}

/// How a preset's amount of work grows with the value of its work argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Growth {
    /// In proportion (iterations, items, runs): `--scale F` multiplies the value by F.
    Linear,
    /// As `base` to the power of the value (fib(n) makes about φ^n calls):
    /// `--scale F` adds log_base(F), rounded.
    Power { base: f64 },
}

/// The golden ratio: fib(n) does about φ^n calls.
const PHI: f64 = 1.618_033_988_749_895;

/// Every preset, in the order `--matrix` runs them.
pub const PRESETS: [Preset; 9] = [
    Preset {
        name: "aco",
        workload: "aco",
        args: &["--iterations", "3000"],
        work: "--iterations",
        growth: Growth::Linear,
        why: "barrier-synchronised task farm, blocking barriers (the papers' ACO); 64 ants split over the threads",
        expected_s: 1.31,
        memory_bound: false,
    },
    Preset {
        name: "aco-spin",
        workload: "aco",
        args: &["--iterations", "2400", "--sync", "spin-then-block"],
        work: "--iterations",
        growth: Growth::Linear,
        why: "the same with barriers that spin 200 us before sleeping (OpenMP-like), where Linux is blind",
        expected_s: 0.79,
        memory_bound: false,
    },
    Preset {
        name: "pipeline",
        workload: "pipeline",
        args: &["--stages", "3,1,1", "--items", "200000"],
        work: "--items",
        growth: Growth::Linear,
        why: "three stages of unequal work over bounded blocking queues; extra threads go to the heavy stage",
        expected_s: 1.15,
        memory_bound: false,
    },
    Preset {
        name: "blackscholes",
        workload: "blackscholes",
        args: &["--runs", "1200"],
        work: "--runs",
        growth: Growth::Linear,
        why: "PARSEC blackscholes (the papers' BLA), independent contiguous chunks, no synchronisation",
        expected_s: 1.23,
        memory_bound: false,
    },
    Preset {
        name: "swaptions",
        workload: "swaptions",
        args: &["--swaptions", "64", "--simulations", "96000"],
        work: "--simulations",
        growth: Growth::Linear,
        why: "PARSEC swaptions (the papers' SWA), Monte Carlo, 64 swaptions in contiguous blocks per thread",
        expected_s: 1.33,
        memory_bound: false,
    },
    Preset {
        name: "binpack",
        workload: "binpack",
        args: &["--pool", "64", "--max-cycles", "160", "--duration", "600s"],
        work: "--max-cycles",
        growth: Growth::Linear,
        why: "bin-packing search (the papers' CSO) with a fixed pool and cycle count, so the work is fixed",
        expected_s: 1.38,
        memory_bound: false,
    },
    Preset {
        name: "stream",
        workload: "stream",
        args: &["--size", "auto", "--gigabytes", "36"],
        work: "--gigabytes",
        growth: Growth::Linear,
        why: "STREAM triad, 36 GB counted, over arrays 4 x the last-level caches together (at least 3 x 64 MiB), \
              memory bound; until 2026-11-29 20 sweeps of them, 0.2 s on a host with a 32 MiB L3, 1.3 s with 260 MiB",
        expected_s: 1.1,
        memory_bound: true,
    },
    Preset {
        name: "heat",
        workload: "heat",
        args: &["--steps", "300"],
        work: "--steps",
        growth: Growth::Linear,
        why: "heat conduction (the bubbles paper's), a stripe per thread, first touch, a blocking barrier per step",
        expected_s: 1.2,
        memory_bound: false,
    },
    Preset {
        name: "fib",
        workload: "fib",
        args: &["--n", "44"],
        work: "--n",
        growth: Growth::Power { base: PHI },
        why: "divide-and-conquer Fibonacci (the bubbles paper's): a tree of threads, the two halves of every split \
              unequal by φ, parents waiting in join",
        expected_s: 1.25,
        memory_bound: false,
    },
];

/// One workload of a bench, ready to run.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchWorkload {
    /// The preset name (`aco-spin`), or the command's program name, used in
    /// tables and file names.
    pub name: String,
    pub launch: Launch,
    /// The preset's expected seconds per run times `--scale`; unknown for a
    /// command until its calibration run.
    pub expected_s: Option<f64>,
    /// The preset's [`Preset::memory_bound`] (a command: false).
    pub memory_bound: bool,
}

/// How a workload is started.
#[derive(Clone, Debug, PartialEq)]
pub enum Launch {
    /// `pinlearn work ARGS`: arguments starting with the workload subcommand;
    /// it reports its own completion time.
    Work(Vec<String>),
    /// Any program (`--command`), told its thread count through the
    /// environment variable `threads_env`; its completion time is the wall
    /// time from its start to its exit.
    Command { argv: Vec<String>, threads_env: String },
}

impl BenchWorkload {
    /// The command a user would type, for tables and docs.
    pub fn command_line(&self) -> String {
        match &self.launch {
            Launch::Work(args) => format!("pinlearn work {}", args.join(" ")),
            Launch::Command { argv, threads_env } => format!("{threads_env}=THREADS {}", shell_words::join(argv)),
        }
    }

    /// The program given with `--command CMD`, its thread count passed in
    /// `threads_env` (e.g. `OMP_NUM_THREADS`).
    pub fn command(command: &str, threads_env: &str) -> Result<Self, BenchError> {
        let argv = shell_words::split(command)
            .map_err(|e| BenchError::BadInput(format!("--command {command:?}: {e} (quote as in a shell)")))?;
        let Some(program) = argv.first() else {
            return Err(BenchError::BadInput(
                "--command is empty: give the program and its arguments, e.g. --command \"./solver input.txt\"".into(),
            ));
        };
        let valid_name = threads_env
            .bytes()
            .enumerate()
            .all(|(i, b)| b == b'_' || b.is_ascii_alphabetic() || (i > 0 && b.is_ascii_digit()));
        if threads_env.is_empty() || !valid_name {
            return Err(BenchError::BadInput(format!(
                "--threads-env {threads_env:?} is not an environment variable name (letters, digits and _, \
                 not starting with a digit; e.g. OMP_NUM_THREADS)"
            )));
        }
        let name = std::path::Path::new(program)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| program.clone());
        Ok(BenchWorkload {
            name,
            launch: Launch::Command {
                argv,
                threads_env: threads_env.to_string(),
            },
            expected_s: None,
            memory_bound: false,
        })
    }
}

/// The workloads named in `--workload` (every preset when none is named),
/// with `--workload-args` replacing the preset's arguments (one workload
/// only), or `--scale` multiplying each preset's amount of work.
pub fn select(
    names: &[String],
    workload_args: Option<&str>,
    scale: Option<f64>,
) -> Result<Vec<BenchWorkload>, BenchError> {
    let names: Vec<&str> = if names.is_empty() {
        PRESETS.iter().map(|p| p.name).collect()
    } else {
        names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()).collect()
    };
    if workload_args.is_some() && names.len() != 1 {
        return Err(BenchError::BadInput(
            "--workload-args needs exactly one --workload to apply to".into(),
        ));
    }
    if let Some(scale) = scale {
        if workload_args.is_some() {
            return Err(BenchError::BadInput(
                "--scale multiplies the presets' work; with --workload-args set the amount there instead".into(),
            ));
        }
        if !(scale.is_finite() && scale > 0.0) {
            return Err(BenchError::BadInput(format!(
                "--scale {scale}: it must be a number > 0 (e.g. 4 for runs four times as long)"
            )));
        }
    }
    let mut chosen: Vec<BenchWorkload> = Vec::new();
    for name in names {
        let preset = PRESETS.iter().find(|p| p.name == name).ok_or_else(|| {
            let known: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
            BenchError::BadInput(format!("unknown workload {name:?}: use one of {}", known.join(", ")))
        })?;
        if chosen.iter().any(|w| w.name == name) {
            return Err(BenchError::BadInput(format!("workload {name} is listed twice")));
        }
        let (own, factor) = match workload_args {
            Some(text) => (split_args(text)?, 1.0),
            None => scaled(preset, scale.unwrap_or(1.0)),
        };
        let mut args = vec![preset.workload.to_string()];
        args.extend(own);
        chosen.push(BenchWorkload {
            name: name.to_string(),
            launch: Launch::Work(args),
            expected_s: Some(preset.expected_s * factor),
            memory_bound: preset.memory_bound,
        });
    }
    Ok(chosen)
}

/// The preset's arguments with its amount of work times `scale`, as near as
/// its work argument allows (at least 1), and the factor the work really
/// grew by.
fn scaled(preset: &Preset, scale: f64) -> (Vec<String>, f64) {
    let mut args: Vec<String> = preset.args.iter().map(|a| a.to_string()).collect();
    if scale == 1.0 {
        return (args, 1.0);
    }
    let at = args
        .iter()
        .position(|a| a == preset.work)
        .expect("a preset names its work")
        + 1;
    let amount: f64 = args[at].parse().expect("a preset's work is a number");
    let (new_amount, factor) = match preset.growth {
        Growth::Linear => {
            let new_amount = (amount * scale).round().max(1.0);
            (new_amount, new_amount / amount)
        }
        Growth::Power { base } => {
            let new_amount = (amount + scale.ln() / base.ln()).round().max(1.0);
            (new_amount, base.powf(new_amount - amount))
        }
    };
    args[at] = (new_amount as u64).to_string();
    (args, factor)
}

/// Splits `--workload-args` at whitespace (no quoting: workload arguments
/// never contain spaces) and rejects the options the bench sets itself.
fn split_args(text: &str) -> Result<Vec<String>, BenchError> {
    let args: Vec<String> = text.split_whitespace().map(str::to_string).collect();
    for arg in &args {
        let option = arg.split('=').next().unwrap_or(arg);
        if ["--threads", "--json", "--quiet", "-q"].contains(&option) {
            return Err(BenchError::BadInput(format!(
                "--workload-args: {option} is set by the bench (threads come from the scenario)"
            )));
        }
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(workload: &BenchWorkload) -> &[String] {
        match &workload.launch {
            Launch::Work(args) => args,
            Launch::Command { .. } => panic!("{} is a command, not a pinlearn workload", workload.name),
        }
    }

    #[test]
    fn every_preset_by_default_in_order() {
        let all = select(&[], None, None).expect("presets");
        let names: Vec<&str> = all.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "aco",
                "aco-spin",
                "pipeline",
                "blackscholes",
                "swaptions",
                "binpack",
                "stream",
                "heat",
                "fib"
            ]
        );
        assert_eq!(args(&all[1])[0], "aco");
        assert_eq!(
            all[1].command_line(),
            "pinlearn work aco --iterations 2400 --sync spin-then-block"
        );
    }

    #[test]
    fn workload_args_replace_the_preset_arguments() {
        let chosen = select(&["aco-spin".into()], Some("  --iterations 20   --ants 8 "), None).expect("valid");
        assert_eq!(args(&chosen[0]), ["aco", "--iterations", "20", "--ants", "8"]);
    }

    #[test]
    fn scale_multiplies_the_work_of_every_preset() {
        let all = select(&[], None, Some(2.5)).expect("presets");
        for (workload, preset) in all.iter().zip(&PRESETS) {
            let at = args(workload)
                .iter()
                .position(|a| a == preset.work)
                .expect("work argument")
                + 1;
            let before: f64 = preset.args[at - 1].parse().unwrap();
            let expected = match preset.growth {
                Growth::Linear => (before * 2.5).round(),
                // φ^2 = 2.62 is the nearest to 2.5.
                Growth::Power { .. } => before + 2.0,
            };
            assert_eq!(args(workload)[at], expected.to_string(), "{}", preset.name);
            // Everything else is the preset's.
            let mut rest = args(workload)[1..].to_vec();
            rest[at - 1] = preset.args[at - 1].to_string();
            assert_eq!(rest, preset.args, "{}", preset.name);
        }
        let tiny = select(&["aco".into()], None, Some(1e-9)).expect("valid");
        assert_eq!(
            args(&tiny[0]),
            ["aco", "--iterations", "1"],
            "at least one unit of work"
        );
    }

    #[test]
    fn fib_grows_its_n_by_the_power_of_phi_nearest_the_scale() {
        for (scale, n, factor) in [(1.0, 44, 1.0), (6.0, 48, 6.854), (0.5, 43, 0.618), (100.0, 54, 122.99)] {
            let chosen = select(&["fib".into()], None, Some(scale)).expect("valid");
            assert_eq!(args(&chosen[0]), ["fib", "--n", &n.to_string()], "scale {scale}");
            let expected = chosen[0].expected_s.expect("a preset's time");
            assert!((expected / 1.25 - factor).abs() < 0.01, "scale {scale}: {expected}");
        }
    }

    #[test]
    fn bad_selections_are_bad_input() {
        for (names, args, scale, needle) in [
            (vec!["nbody".to_string()], None, None, "unknown workload"),
            (
                vec!["aco".into(), "stream".into()],
                Some("--runs 1"),
                None,
                "exactly one",
            ),
            (vec!["aco".into()], Some("--threads 4"), None, "--threads"),
            (vec!["aco".into()], Some("--json"), None, "--json"),
            (vec!["aco".into(), "aco".into()], None, None, "twice"),
            (vec!["aco".into()], Some("--iterations 9"), Some(2.0), "--scale"),
            (vec!["aco".into()], None, Some(0.0), "> 0"),
            (vec!["aco".into()], None, Some(f64::NAN), "> 0"),
        ] {
            let err = select(&names, args, scale).expect_err(needle);
            assert!(matches!(err, BenchError::BadInput(_)));
            assert!(err.to_string().contains(needle), "{err}");
        }
    }

    #[test]
    fn a_command_is_split_as_a_shell_would_and_named_by_its_program() {
        let workload = BenchWorkload::command("target/omp/omp_stencil 512 '12 000'", "OMP_NUM_THREADS").expect("valid");
        assert_eq!(workload.name, "omp_stencil");
        assert_eq!(
            workload.launch,
            Launch::Command {
                argv: vec!["target/omp/omp_stencil".into(), "512".into(), "12 000".into()],
                threads_env: "OMP_NUM_THREADS".into(),
            }
        );
        assert_eq!(
            workload.command_line(),
            "OMP_NUM_THREADS=THREADS target/omp/omp_stencil 512 '12 000'"
        );
        assert_eq!(workload.expected_s, None);
    }

    #[test]
    fn a_bad_command_or_variable_name_is_bad_input() {
        for (command, variable, needle) in [
            ("", "OMP_NUM_THREADS", "empty"),
            ("   ", "OMP_NUM_THREADS", "empty"),
            ("./solver 'unclosed", "OMP_NUM_THREADS", "quote"),
            ("./solver", "", "environment variable name"),
            ("./solver", "1THREADS", "environment variable name"),
            ("./solver", "OMP NUM", "environment variable name"),
            ("./solver", "N=4", "environment variable name"),
        ] {
            let err = BenchWorkload::command(command, variable).expect_err(needle);
            assert!(err.is_bad_input());
            assert!(err.to_string().contains(needle), "{err}");
        }
    }
}
