//! The simulator's plot: the running-average speed of every scheduler over
//! simulated time (`--plot`), drawn by pinlearn-report. The table and the
//! records are the shared ones of pinlearn-experiment.
//!
//! ```text
//!   series per scheduler ──plot──► SVG line chart
//! ```

use std::path::Path;

/// Draws the running-average speed of every scheduler over simulated time.
pub fn plot(path: &Path, title: &str, y_label: &str, lines: &[(String, Vec<(f64, f64)>)]) -> Result<(), String> {
    let axes = pinlearn_report::Axes {
        x: "simulated time (s)",
        y: y_label,
    };
    pinlearn_report::speed_plot(path, title, axes, lines).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plot_writes_an_svg_with_every_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("speed.svg");
        let lines = vec![
            ("os".to_string(), (0..5000).map(|k| (k as f64 * 0.05, 0.5)).collect()),
            ("learn:mean".to_string(), vec![(0.0, 0.2), (10.0, 0.8)]),
        ];
        plot(&path, "B.2", "speed", &lines).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
        assert!(svg.contains("learn:mean") && svg.contains("simulated time"));
        assert!(svg.matches("<polyline").count() >= 2, "one line per scheduler");
    }
}
