//! `--trace FILE`: one CSV row per thread per period.
//!
//! Columns: `time_s, period, pid, tid, name, place, speed, utility, bubble,
//! waiting, share, grain_s`, where `place` is the CPU list the thread may run on after this
//! period (list syntax, e.g. `1` or `0-1`), `speed` the measured speed over
//! the period, `utility` what the policy learned from (empty when unknown),
//! `bubble` the name of the thread's bubble (`--bubbles`; empty when in
//! none) and `waiting` the share of the thread's recent CPU-clock samples
//! found in waiting code, older periods fading (empty before it was sampled),
//! and `share` the share of its runnable time the thread ran over the period
//! (1: it never waited for a CPU; what the learner's crowd moves use), and
//! `grain_s` its run time per voluntary sleep as last read (empty unless the
//! other programs run in scheduling groups apart from its own and it
//! slept: what the crowd's wake-ups use), `progress` what the period
//! measured of the whole program, as the do-no-harm guard scores it (the
//! application's own rate where known, else the sum of the threads'
//! speeds; the same on every row of a period), and `arm` who places the
//! threads in the next period under the guard (`learn`, or `os` in
//! Linux's windows; empty for a policy without a guard): its windows, and
//! what each measured, read from the rows of consecutive periods, and
//! `remote` the share of the threads' memory on other NUMA nodes than the
//! ones they ran on over the period (the same on every row of a period;
//! empty where the target cannot tell: one memory node, no page-fault
//! samples).

use crate::EngineError;
use crate::target::ThreadInfo;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

pub struct Trace {
    writer: csv::Writer<BufWriter<File>>,
    path: String,
}

impl Trace {
    pub const HEADER: [&'static str; 15] = [
        "time_s", "period", "pid", "tid", "name", "place", "speed", "utility", "bubble", "waiting", "share", "grain_s",
        "progress", "arm", "remote",
    ];

    pub fn create(path: &Path) -> Result<Self, EngineError> {
        let file = File::create(path)
            .map_err(|e| EngineError::bad_input(format!("cannot create trace file {}: {e}", path.display())))?;
        let mut writer = csv::Writer::from_writer(BufWriter::new(file));
        let path = path.display().to_string();
        writer.write_record(Self::HEADER).map_err(|e| csv_error(&path, e))?;
        Ok(Trace { writer, path })
    }

    #[allow(clippy::too_many_arguments)]
    pub fn row(
        &mut self,
        time_s: f64,
        period: u64,
        who: &ThreadInfo,
        place: &str,
        speed: Option<f64>,
        utility: f64,
        bubble: &str,
        waiting: Option<f64>,
        share: Option<f64>,
        grain_s: Option<f64>,
        progress: Option<f64>,
        arm: &str,
        remote: Option<f64>,
    ) -> Result<(), EngineError> {
        let number = |v: f64| {
            if v.is_finite() {
                format!("{v:.6}")
            } else {
                String::new()
            }
        };
        let record = [
            format!("{time_s:.4}"),
            period.to_string(),
            who.pid.to_string(),
            who.tid.to_string(),
            who.name.clone(),
            place.to_string(),
            speed.map(number).unwrap_or_default(),
            number(utility),
            bubble.to_string(),
            waiting.map(number).unwrap_or_default(),
            share.map(number).unwrap_or_default(),
            grain_s.map(number).unwrap_or_default(),
            progress.map(number).unwrap_or_default(),
            arm.to_string(),
            remote.map(number).unwrap_or_default(),
        ];
        self.writer.write_record(&record).map_err(|e| csv_error(&self.path, e))
    }

    pub fn flush(&mut self) -> Result<(), EngineError> {
        self.writer
            .flush()
            .map_err(|e| EngineError::io(format!("writing trace {}", self.path), e))
    }
}

fn csv_error(path: &str, e: csv::Error) -> EngineError {
    EngineError::io(format!("writing trace {path}"), std::io::Error::other(e))
}
