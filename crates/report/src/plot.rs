//! SVG plots with plotters' SVG backend (no fonts needed: labels are SVG
//! `<text>` elements laid out by the viewer).
//!
//! ```text
//!   speed_plot: [(scheduler, [(time s, speed)])] ─► axes from the data ranges
//!               ─► one polyline per scheduler + a legend (coloured squares)
//!   bar_plot:   [(label, Stats)] ─► one horizontal bar per label at its
//!               median, a whisker from min to max, labels on the left
//! ```

use crate::{ReportError, Stats};
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use std::path::Path;

/// Distinct colours for lines, cycled when there are more series.
const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

fn draw_error(path: &Path, e: impl std::fmt::Display) -> ReportError {
    ReportError::Draw {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

/// At most this many points are drawn per line (long runs are thinned evenly).
const LINE_POINTS: usize = 1500;

/// The axis descriptions of a speed plot.
#[derive(Clone, Copy, Debug)]
pub struct Axes<'a> {
    pub x: &'a str,
    pub y: &'a str,
}

impl Default for Axes<'_> {
    fn default() -> Self {
        Axes {
            x: "time (s)",
            y: "running-average speed per thread",
        }
    }
}

/// Draws speed over time, one line per series (e.g. the running-average
/// speed of a workload's threads under each scheduler), into an SVG file.
/// Points with non-finite coordinates are skipped; series left without
/// points get no line but keep their legend entry; long series are thinned
/// to at most 1500 points.
pub fn speed_plot(
    path: &Path,
    title: &str,
    axes: Axes<'_>,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<(), ReportError> {
    let finite: Vec<(&str, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(name, points)| {
            let kept: Vec<(f64, f64)> = points
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect();
            let stride = kept.len().div_ceil(LINE_POINTS).max(1);
            (name.as_str(), kept.into_iter().step_by(stride).collect())
        })
        .collect();
    let all = finite.iter().flat_map(|(_, p)| p.iter());
    let (x_max, y_max) = all.fold((f64::MIN, f64::MIN), |(xm, ym), &(x, y)| (xm.max(x), ym.max(y)));
    if x_max == f64::MIN {
        return Err(ReportError::NoData {
            path: path.display().to_string(),
            what: "no series has a finite point".into(),
        });
    }
    let x_max = if x_max > 0.0 { x_max } else { 1.0 };
    let y_max = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };

    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw_error(path, e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)
        .map_err(|e| draw_error(path, e))?;
    chart
        .configure_mesh()
        .x_desc(axes.x)
        .y_desc(axes.y)
        .draw()
        .map_err(|e| draw_error(path, e))?;
    for (i, (name, points)) in finite.into_iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        chart
            .draw_series(LineSeries::new(points, colour.stroke_width(2)))
            .map_err(|e| draw_error(path, e))?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(|e| draw_error(path, e))?;
    root.present().map_err(|e| draw_error(path, e))
}

/// Draws one horizontal bar per entry at its median completion time, with
/// a whisker from its minimum to its maximum, labels on the left, into an
/// SVG file (horizontal, so that long labels such as `C.2 learn:own` stay
/// readable however many bars there are).
pub fn bar_plot(path: &Path, title: &str, bars: &[(String, Stats)]) -> Result<(), ReportError> {
    if bars.is_empty() {
        return Err(ReportError::NoData {
            path: path.display().to_string(),
            what: "no bars".into(),
        });
    }
    let right = bars.iter().map(|(_, s)| s.max).fold(0.0, f64::max);
    let right = if right.is_finite() && right > 0.0 {
        right * 1.1
    } else {
        1.0
    };
    let labels: Vec<&str> = bars.iter().map(|(l, _)| l.as_str()).collect();
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) as u32;
    // Integer ranges are inclusive in plotters: 0..=n-1 gives n segments.
    let last = bars.len() as i32 - 1;

    let height = 110 + 30 * bars.len() as u32;
    let root = SVGBackend::new(path, (900, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw_error(path, e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(20 + 8 * longest)
        .build_cartesian_2d(0.0..right, (0..last).into_segmented())
        .map_err(|e| draw_error(path, e))?;
    // The first bar at the top: entry i sits in segment last - i.
    let row = |i: usize| last - i as i32;
    let label_of = |v: &SegmentValue<i32>| match v {
        SegmentValue::CenterOf(k) => labels
            .get((last - *k) as usize)
            .map_or(String::new(), |l| l.to_string()),
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(bars.len())
        .y_label_formatter(&label_of)
        .x_desc("completion time (s): bar at the median, whisker from min to max")
        .draw()
        .map_err(|e| draw_error(path, e))?;
    let fill = COLOURS[0].mix(0.7).filled();
    chart
        .draw_series(bars.iter().enumerate().map(|(i, (_, s))| {
            let i = row(i);
            let mut bar = Rectangle::new(
                [(0.0, SegmentValue::Exact(i)), (s.median, SegmentValue::Exact(i + 1))],
                fill,
            );
            bar.set_margin(5, 5, 0, 0);
            bar
        }))
        .map_err(|e| draw_error(path, e))?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, (_, s))| {
            let at = SegmentValue::CenterOf(row(i));
            PathElement::new(vec![(s.min, at.clone()), (s.max, at)], BLACK.stroke_width(2))
        }))
        .map_err(|e| draw_error(path, e))?;
    root.present().map_err(|e| draw_error(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats;

    fn thick_polylines(svg: &str) -> usize {
        svg.lines()
            .filter(|l| l.starts_with("<polyline") && l.contains("stroke-width=\"2\""))
            .count()
    }

    /// The contents of every <text> element, trimmed.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let body = &t[t.find('>')? + 1..];
                Some(body[..body.find("</text>")?].trim().to_string())
            })
            .collect()
    }

    #[test]
    fn speed_plot_writes_an_svg_with_one_polyline_per_series_and_the_names() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("speed.svg");
        let series = vec![
            ("os".to_string(), vec![(0.0, 0.5), (0.5, 0.6), (1.0, 0.7)]),
            (
                "learn".to_string(),
                vec![(0.0, 0.4), (0.5, 0.8), (1.0, f64::NAN), (1.5, 0.9)],
            ),
            ("static".to_string(), vec![(0.0, 0.3), (1.2, 0.35)]),
        ];
        speed_plot(&path, "aco C.2", Axes::default(), &series).expect("plot written");
        let svg = std::fs::read_to_string(&path).expect("svg readable");
        assert!(svg.contains("<svg"), "not an SVG: {svg:.200}");
        assert!(svg.trim_end().ends_with("</svg>"));
        // Axes and ticks are 1-pixel polylines; data lines are 2 pixels wide,
        // one per series, each in its own colour.
        assert_eq!(thick_polylines(&svg), 3, "{svg}");
        for colour in &COLOURS[..3] {
            let hex = format!("#{:02X}{:02X}{:02X}", colour.0, colour.1, colour.2);
            assert!(
                svg.contains(&format!("stroke=\"{hex}\" stroke-width=\"2\"")),
                "no line in {hex}"
            );
        }
        for name in ["os", "learn", "static", "aco C.2", "time (s)"] {
            assert!(texts(&svg).contains(&name.to_string()), "label {name} missing");
        }
    }

    #[test]
    fn speed_plot_without_points_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("empty.svg");
        let err = speed_plot(&path, "t", Axes::default(), &[("os".into(), vec![])]).expect_err("no data");
        assert!(err.to_string().contains("empty.svg"), "{err}");
    }

    #[test]
    fn bar_plot_writes_one_bar_and_one_whisker_per_entry() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("bars.svg");
        let bars = vec![
            ("C.1 os".to_string(), stats(&[2.0, 2.2, 2.1]).expect("stats")),
            ("C.1 learn".to_string(), stats(&[1.9, 2.4]).expect("stats")),
        ];
        bar_plot(&path, "aco", &bars).expect("plot written");
        let svg = std::fs::read_to_string(&path).expect("svg readable");
        assert!(svg.contains("<svg"));
        // Whiskers are the only 2-pixel polylines; bars are filled
        // rectangles (the background is one more rect).
        assert_eq!(thick_polylines(&svg), 2, "{svg}");
        assert_eq!(svg.matches("<rect").count(), 3, "{svg}");
        assert!(texts(&svg).contains(&"C.1 learn".to_string()));
        let missing = tempfile::tempdir().expect("temp dir");
        let bad = missing.path().join("no/such/dir/bars.svg");
        assert!(matches!(bar_plot(&bad, "aco", &bars), Err(ReportError::Draw { .. })));
        assert!(matches!(bar_plot(&path, "aco", &[]), Err(ReportError::NoData { .. })));
        let one = dir.path().join("one.svg");
        bar_plot(&one, "aco", &bars[..1]).expect("a single bar");
        let svg = std::fs::read_to_string(&one).expect("svg readable");
        assert_eq!(thick_polylines(&svg), 1, "{svg}");
    }
}
