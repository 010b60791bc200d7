//! `--json FILE`: everything the bench found, as is (setup, calibration,
//! best-static searches, every run, the summary).

use crate::BenchResults;

/// The JSON document `--json` writes.
pub fn to_json(results: &BenchResults) -> String {
    serde_json::to_string_pretty(results).expect("bench results serialise to JSON")
}
